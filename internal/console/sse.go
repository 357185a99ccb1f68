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

// retryAfter is the Retry-After, in seconds, of a stream refused for the
// cap.
const retryAfter = "10"

// events serves the browser's EventSource: one "data:" message per hub
// flush, a JSON array of changes. A client the hub dropped gets a "resync"
// event and the stream ends; its page reloads what it shows.
//
// A page says what it rendered: since, the mirror's change count (with wf,
// the workflow it shows), and after, the last audit sequence it shows. The
// stream starts with what changed since, so no change falls between a
// page's render and its stream.
//
// At most Config.MaxEventStreams streams are live at once: one more is
// answered 503 with Retry-After. Every write (and its flush) must finish
// within Config.EventWriteTimeout: a browser that stops reading is dropped
// when its socket's buffers are full and the bound passes, and since the
// hub never waits for a client, it slows nobody else.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	release, ok := s.takeStream(w)
	if !ok {
		return
	}
	defer release()
	rc := http.NewResponseController(w)
	if err := rc.SetWriteDeadline(time.Now().Add(s.sseWait)); err != nil {
		// Without a bound on its writes, a stream would hold a goroutine
		// for as long as a browser stalls.
		http.Error(w, "event stream: cannot bound its writes: "+err.Error(), http.StatusInternalServerError)
		return
	}
	send := func(b []byte) error {
		if err := rc.SetWriteDeadline(time.Now().Add(s.sseWait)); err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	c := s.hub.subscribe()
	defer s.hub.unsubscribe(c)
	if send([]byte("retry: 2000\n: hello\n\n")) != nil {
		return
	}
	q := r.URL.Query()
	var catchUp []json.RawMessage
	if since, err := strconv.ParseUint(q.Get("since"), 10, 64); err == nil {
		items, ok := s.mirror.since(q.Get("wf"), since, maxBatch)
		if !ok {
			_ = send([]byte("event: resync\ndata: {}\n\n"))
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
		if send(append(append([]byte("data: "), b...), '\n', '\n')) != nil {
			return
		}
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
			_ = send([]byte("event: resync\ndata: {}\n\n"))
			return
		case <-t.C:
			err = send([]byte(": ping\n\n"))
		case msg := <-c.ch:
			err = send(append(append([]byte("data: "), msg...), '\n', '\n'))
		}
		if err != nil {
			return
		}
	}
}

// liveStreams is how many event streams are being served.
func (s *Server) liveStreams() int { return len(s.streams) }

// takeStream takes one of the Config.MaxEventStreams slots, or answers 503
// with Retry-After and returns false. Call release when the stream ends.
func (s *Server) takeStream(w http.ResponseWriter) (release func(), ok bool) {
	select {
	case s.streams <- struct{}{}:
		return func() { <-s.streams }, true
	default:
		w.Header().Set("Retry-After", retryAfter)
		http.Error(w, "too many live event streams; try again later", http.StatusServiceUnavailable)
		return nil, false
	}
}
