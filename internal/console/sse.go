package console

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// keepAlive is how often an idle event stream sends a comment, so proxies
// keep it open.
const keepAlive = 25 * time.Second

// events serves the browser's EventSource: one "data:" message per hub
// flush, a JSON array of changes. A client the hub dropped gets a "resync"
// event and the stream ends; its page reloads what it shows.
//
// A page says what it rendered: since, the mirror's change count (with wf,
// the workflow it shows), and after, the last audit sequence it shows. The
// stream starts with what changed since, so no change falls between a
// page's render and its stream.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's write timeout
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	c := s.hub.subscribe()
	defer s.hub.unsubscribe(c)
	if _, err := w.Write([]byte("retry: 2000\n: hello\n\n")); err != nil {
		return
	}
	q := r.URL.Query()
	var catchUp []json.RawMessage
	if since, err := strconv.ParseUint(q.Get("since"), 10, 64); err == nil {
		items, ok := s.mirror.since(q.Get("wf"), since, maxBatch)
		if !ok {
			_, _ = w.Write([]byte("event: resync\ndata: {}\n\n"))
			_ = rc.Flush()
			return
		}
		for _, it := range items {
			if b, err := json.Marshal(it); err == nil {
				catchUp = append(catchUp, b)
			}
		}
	}
	if after, err := strconv.ParseUint(q.Get("after"), 10, 64); err == nil {
		catchUp = append(catchUp, s.hub.auditAfter(after)...)
	}
	if len(catchUp) > 0 {
		b, _ := json.Marshal(catchUp)
		if _, err := w.Write(append(append([]byte("data: "), b...), '\n', '\n')); err != nil {
			return
		}
	}
	if rc.Flush() != nil {
		return
	}
	t := time.NewTicker(keepAlive)
	defer t.Stop()
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-s.stopped:
			return
		case <-c.dropped:
			_, _ = w.Write([]byte("event: resync\ndata: {}\n\n"))
			_ = rc.Flush()
			return
		case <-t.C:
			_, err = w.Write([]byte(": ping\n\n"))
		case msg := <-c.ch:
			_, err = w.Write(append(append([]byte("data: "), msg...), '\n', '\n'))
		}
		if err != nil || rc.Flush() != nil {
			return
		}
	}
}
