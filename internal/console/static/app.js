// Drover console: live updates over Server-Sent Events. Every text from
// the server goes into the page through textContent, never as HTML.
"use strict";
(function () {
  var body = document.body, d = body.dataset, base = d.base || "", view = d.view;
  var stats = (window.droverConsole = { received: 0, batches: 0, shown: 0, lost: 0 });
  var live = document.getElementById("live");

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function taskURL(wf, t) { return base + "/tasks/" + encodeURIComponent(wf) + "/" + encodeURIComponent(t); }

  // Board: cards move between columns; counters follow.
  var cap = parseInt(d.cap || "200", 10);
  function onTask(m) {
    if (view === "board") {
      if (m.w !== d.wf) return;
      var card = null, all = document.querySelectorAll(".card[data-task]");
      for (var i = 0; i < all.length; i++) if (all[i].dataset.task === m.t) { card = all[i]; break; }
      if (m.col === "") { if (card) card.remove(); }
      else {
        var col = document.querySelector('.col[data-col="' + m.col + '"] .cards');
        if (col) {
          if (!card && d.page === "0" && col.children.length < cap) {
            card = el("a", "card"); card.dataset.task = m.t; card.href = taskURL(m.w, m.t);
            card.appendChild(el("span", "id", m.t)); card.appendChild(el("span", "meta"));
          }
          if (card) {
            fillCard(card, m);
            if (card.parentNode !== col) col.appendChild(card);
          }
        }
      }
      if (m.c) document.querySelectorAll("[data-count]").forEach(function (e) { e.textContent = String(m.c[e.dataset.count] || 0); });
      var tot = document.getElementById("total"); if (tot && m.n !== undefined) tot.textContent = String(m.n);
      showState(document.getElementById("wfstate"), { s: m.ws, d: m.d });
    } else if (view === "workflows") {
      updateWorkflowRow(m);
    } else if (view === "task" && m.w === d.wf && m.t === d.task) {
      reloadSoon();
    }
  }
  // A card's title (the scope's first line), agent, attempt and elapsed
  // time, all as text.
  function fillCard(card, m) {
    var title = card.querySelector(".title");
    if (!title && m.ti) { title = el("span", "title"); card.insertBefore(title, card.querySelector(".meta")); }
    if (title) { title.textContent = m.ti || ""; title.title = m.ti || ""; }
    var meta = card.querySelector(".meta");
    if (!meta) return;
    meta.textContent = "";
    if (m.s === "paused") { meta.appendChild(el("span", "pill s-paused", "paused")); meta.appendChild(document.createTextNode(" ")); }
    if (m.ag) { meta.appendChild(el("span", "agent", m.ag)); meta.appendChild(document.createTextNode(" ")); }
    var dim = el("span", "dim", "#" + m.a + " "); dim.appendChild(el("span", "el", m.el || "")); meta.appendChild(dim);
    if (m.rn) { card.dataset.run = String(m.rn); card.dataset.at = String(Date.now()); }
    else { delete card.dataset.run; delete card.dataset.at; }
  }
  // A running task's elapsed time counts on, from the server's figure at
  // render (or push) plus the time since on this clock.
  function fmtDur(ms) {
    if (!(ms > 0)) return "\u2013";
    if (ms < 1000) return Math.floor(ms) + "ms";
    var s = ms / 1000;
    if (s < 60) return s.toFixed(1) + "s";
    var mi = Math.floor(s / 60), pad = function (n) { return (n < 10 ? "0" : "") + n; };
    if (mi < 60) return mi + "m" + pad(Math.floor(s) % 60) + "s";
    return Math.floor(mi / 60) + "h" + pad(mi % 60) + "m";
  }
  var loadedAt = Date.now();
  if (view === "board") setInterval(function () {
    var now = Date.now();
    document.querySelectorAll(".card[data-run]").forEach(function (card) {
      var e = card.querySelector(".el"); if (!e) return;
      e.textContent = fmtDur(parseInt(card.dataset.run, 10) + now - parseInt(card.dataset.at || String(loadedAt), 10));
    });
  }, 1000);
  // A workflow's shown state (finished when its tasks all ended) changes
  // in place; a change of its real state (paused, cancelled) reloads the
  // page for its buttons.
  function showState(e, m) {
    if (!e || !m.s) return;
    if (e.dataset.state !== m.s) { reloadSoon(); return; }
    var shown = m.d || m.s;
    if (e.textContent !== shown) { e.textContent = shown; e.className = "pill s-" + shown; }
  }
  function onWorkflow(m) {
    if (view === "board" && m.w === d.wf) {
      showState(document.getElementById("wfstate"), m);
    } else if (view === "workflows") {
      var row = rowOf(m.w);
      if (row) showState(row.querySelector('[data-x="state"]'), m);
      updateWorkflowRow(m);
    }
  }
  function rowOf(wf) {
    var rows = document.querySelectorAll("tr[data-wf]");
    for (var i = 0; i < rows.length; i++) if (rows[i].dataset.wf === wf) return rows[i];
    return null;
  }
  function updateWorkflowRow(m) {
    var row = rowOf(m.w);
    if (!row) { reloadSoon(); return; }
    var c = m.c || {}, done = c.done || 0, failed = c.failed || 0;
    set(row, "done", done); set(row, "failed", failed); set(row, "open", m.o); set(row, "total", m.n);
    if (m.ws) showState(row.querySelector('[data-x="state"]'), { s: m.ws, d: m.d });
    var p = row.querySelector('[data-x="progress"]'); if (p) { p.max = m.n; p.value = done + failed; }
  }
  function set(row, k, v) { var e = row.querySelector('[data-x="' + k + '"]'); if (e && v !== undefined) e.textContent = String(v); }

  var reloadTimer = null;
  function reloadSoon() {
    if (reloadTimer) return;
    reloadTimer = setTimeout(function () { location.reload(); }, 800);
  }

  // Fleet: counters and the sparkline.
  function onFleet(m) {
    if (view !== "fleet") return;
    ["hr", "ce", "am", "ab"].forEach(function (k) { var e = document.querySelector('[data-f="' + k + '"]'); if (e) e.textContent = String(m[k]); });
    document.querySelectorAll("tr[data-queue]").forEach(function (row) {
      var q = m.q && m.q[row.dataset.queue]; if (!q) return;
      row.querySelectorAll("[data-q]").forEach(function (e) {
        var v = q[e.dataset.q]; var t = e.querySelector("a") || e; t.textContent = String(v);
      });
    });
    document.querySelectorAll("tr[data-worker]").forEach(function (row) {
      var w = m.wk && m.wk[row.dataset.worker]; if (!w) return;
      row.querySelectorAll("[data-w]").forEach(function (e) {
        if (e.dataset.w === "use") e.value = w.in_flight; else e.textContent = String(w[e.dataset.w]);
      });
    });
    var sp = document.getElementById("spark");
    if (sp && m.sp) {
      var hi = Math.max.apply(null, m.sp.concat([1])), n = m.sp.length, pts = [];
      for (var i = 0; i < n; i++) pts.push((i * 300 / Math.max(n - 1, 1)).toFixed(1) + "," + (38 - m.sp[i] * 36 / hi).toFixed(1));
      sp.setAttribute("points", pts.join(" "));
    }
  }

  // Audit: new rows on top, filtered like the page, at most cap rows.
  var paused = false, held = [], auditCap = parseInt(d.cap || "500", 10);
  var lastSeq = parseInt(d.after || "0", 10); // audit events up to it are shown
  var rows = document.getElementById("rows");
  function matches(m) {
    return (!d.fworkflow || m.w === d.fworkflow) && (!d.ftask || m.t === d.ftask) &&
      (!d.factor || m.ac === d.factor) && (!d.ftype || m.e === d.ftype);
  }
  function auditRow(m) {
    var tr = el("tr", "new");
    tr.appendChild(el("td", "n", m.q));
    tr.appendChild(el("td", "", m.ts));
    tr.appendChild(el("td", "", m.w));
    var td = el("td");
    if (m.t && m.t !== "_") { var a = el("a", "", m.t); a.href = taskURL(m.w, m.t); td.appendChild(a); } else td.textContent = m.t || "";
    tr.appendChild(td);
    tr.appendChild(el("td", "", m.ac));
    var ty = el("td"); ty.appendChild(el("span", "evtype", m.e)); tr.appendChild(ty);
    tr.appendChild(el("td", "", m.st));
    tr.appendChild(el("td", "text", m.x));
    return tr;
  }
  function showAudit(list) {
    if (!rows || !list.length) return;
    var frag = document.createDocumentFragment();
    var start = Math.max(0, list.length - auditCap);
    for (var i = list.length - 1; i >= start; i--) frag.appendChild(auditRow(list[i]));
    rows.insertBefore(frag, rows.firstChild);
    while (rows.children.length > auditCap) rows.removeChild(rows.lastChild);
    stats.shown += list.length;
  }
  var pauseBtn = document.getElementById("pause"), heldEl = document.getElementById("held");
  if (pauseBtn) pauseBtn.addEventListener("click", function () {
    paused = !paused;
    pauseBtn.textContent = paused ? "Resume" : "Pause";
    if (!paused) { showAudit(held.slice(-auditCap)); held = []; }
    if (heldEl) heldEl.textContent = "";
  });

  function onBatch(list) {
    stats.batches++;
    var audit = [];
    for (var i = 0; i < list.length; i++) {
      var m = list[i];
      switch (m.k) {
        case "t": onTask(m); break;
        case "w": onWorkflow(m); break;
        case "f": onFleet(m); break;
        case "a":
          if (m.q <= lastSeq) break; // sent twice: in the catch-up and live
          lastSeq = m.q;
          stats.received++;
          if (view === "audit" && !d.nolive && matches(m)) audit.push(m);
          if (view === "task" && m.w === d.wf && m.t === d.task) reloadSoon();
          break;
        case "lost": stats.lost += m.n; break;
      }
    }
    if (!audit.length) return;
    if (paused) {
      held = held.concat(audit); if (held.length > auditCap) held = held.slice(-auditCap);
      if (heldEl) heldEl.textContent = held.length + " new events held";
    } else showAudit(audit);
  }

  if (!window.EventSource) return;
  var q = [];
  if (d.rev) q.push("since=" + encodeURIComponent(d.rev));
  if (d.wf) q.push("wf=" + encodeURIComponent(d.wf));
  if (d.after) q.push("after=" + encodeURIComponent(d.after));
  // A stream the console refuses (503: too many open pages) is closed by
  // the browser for good: open it again in 10 to 20 s.
  function connect() {
    var es = new EventSource(base + "/events" + (q.length ? "?" + q.join("&") : ""));
    es.onopen = function () { if (live) { live.textContent = "live"; live.className = "live on"; } };
    es.onerror = function () {
      if (live) { live.textContent = "reconnecting"; live.className = "live"; }
      if (es.readyState === EventSource.CLOSED) setTimeout(connect, 10000 + Math.random() * 10000);
    };
    es.onmessage = function (e) { try { onBatch(JSON.parse(e.data)); } catch (err) { /* a bad message is skipped */ } };
    es.addEventListener("resync", function () { es.close(); if (view !== "audit") reloadSoon(); else setTimeout(function () { location.reload(); }, 1000); });
  }
  connect();
})();
