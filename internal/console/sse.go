package console

import (
	"net/http"
	"time"
)

// keepAlive is how often an idle event stream sends a comment, so proxies
// keep it open.
const keepAlive = 25 * time.Second

// events serves the browser's EventSource: one "data:" message per hub
// flush, a JSON array of changes. A client the hub dropped gets a "resync"
// event and the stream ends; its page reloads what it shows.
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
