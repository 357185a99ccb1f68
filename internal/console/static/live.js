// Drover console: a task's live activity (what its agents say and do while
// a role runs), appended as it comes over Server-Sent Events. Every text
// goes into the page through textContent, never as HTML.
"use strict";
(function () {
  var d = document.body.dataset, log = document.getElementById("livelog");
  if (!log || d.view !== "task" || !window.EventSource) return;
  var cap = parseInt(d.livecap || "300", 10), count = document.getElementById("livecount");
  var stats = (window.droverLive = { received: 0 });
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function add(m) {
    var li = el("li", "lv k-" + String(m.kind).replace(/[^a-z_]/g, ""));
    li.dataset.seq = String(m.seq);
    li.appendChild(el("span", "dim", new Date(m.time).toLocaleTimeString()));
    li.appendChild(document.createTextNode(" "));
    li.appendChild(el("span", "tag", m.role + "#" + m.attempt));
    li.appendChild(document.createTextNode(" "));
    li.appendChild(el("span", "kind", m.kind));
    if (m.dropped) li.appendChild(el("span", "dim", " (" + m.dropped + " dropped before)"));
    li.appendChild(document.createTextNode(" "));
    li.appendChild(el("span", "txt", m.text));
    log.appendChild(li);
    while (log.children.length > cap) log.removeChild(log.firstElementChild);
    var empty = document.getElementById("liveempty"); if (empty) empty.hidden = true;
    if (count) count.textContent = log.children.length + " lines";
  }
  var url = (d.base || "") + "/tasks/" + encodeURIComponent(d.wf) + "/" + encodeURIComponent(d.task) +
    "/live?after=" + encodeURIComponent(d.liveseq || "0");
  var es = new EventSource(url);
  es.onmessage = function (ev) {
    var m;
    try { m = JSON.parse(ev.data); } catch (e) { return; }
    stats.received++;
    add(m);
  };
})();
