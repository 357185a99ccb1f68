package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/streamread"
	"github.com/droverhq/drover/subjects"
)

// maxLiveRows bounds the live activity lines the task page renders (the
// newest) and keeps as new ones come (static/live.js drops the oldest).
const maxLiveRows = 300

// liveRow is a live line as the task page shows it, and as its event
// stream sends it. Text is shown with textContent (html/template escapes it
// when rendered), never as HTML.
type liveRow struct {
	Seq     uint64    `json:"seq"`
	Role    string    `json:"role"`
	Attempt int       `json:"attempt"`
	Kind    string    `json:"kind"`
	Tool    string    `json:"tool,omitempty"`
	Text    string    `json:"text"`
	Dropped uint64    `json:"dropped,omitempty"`
	Time    time.Time `json:"time"`
}

// liveRowOf decodes a live line; the worker escaped and bounded its text,
// and here it is escaped and bounded again, as any text read from NATS.
func liveRowOf(seq uint64, data []byte) (liveRow, bool) {
	var l subjects.LiveLine
	if json.Unmarshal(data, &l) != nil {
		return liveRow{}, false
	}
	clip := func(s string, n int) string { return redact.ClipRunes(redact.Terminal(s), n) }
	return liveRow{Seq: seq, Role: clip(string(l.Role), 32), Attempt: l.Attempt, Kind: clip(string(l.Kind), 32),
		Tool: clip(l.Tool, 128), Text: clip(l.Text, subjects.MaxLiveText), Dropped: l.Dropped, Time: l.Time}, true
}

// liveConsumer opens an ordered consumer on a task's live subject from
// stream sequence start (0: the first line kept).
func (s *Server) liveConsumer(ctx context.Context, wf, id string, start uint64) (jetstream.Consumer, error) {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{s.names.LiveSubject(wf, id)}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if start > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, start
	}
	return streamread.OrderedConsumer(ctx, s.js, s.names.LiveStream(), cfg)
}

// liveLines reads the newest maxLiveRows live lines of a task, and the
// stream sequence of the last one (0: none). A missing live stream (no
// worker of this version yet) has none.
func (s *Server) liveLines(ctx context.Context, wf, id string) ([]liveRow, uint64, error) {
	cons, err := s.liveConsumer(ctx, wf, id, 0)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer streamread.DeleteConsumer(ctx, streamread.StreamOf(s.js, s.names.LiveStream()), cons)
	info, err := cons.Info(ctx)
	if err != nil || info.NumPending == 0 {
		return nil, 0, err
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, 0, err
	}
	defer it.Stop()
	var (
		rows []liveRow
		last uint64
	)
	// Up to the lines pending at the start: the page's event stream
	// follows from the last one read, so a busy task cannot keep the
	// render reading.
	for n := uint64(0); ; n++ {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return nil, 0, err
		}
		md, err := msg.Metadata()
		if err != nil {
			return nil, 0, err
		}
		last = md.Sequence.Stream
		if row, ok := liveRowOf(last, msg.Data()); ok {
			if len(rows) == maxLiveRows {
				rows = append(rows[:0], rows[1:]...)
			}
			rows = append(rows, row)
		}
		if md.NumPending == 0 || n+1 >= info.NumPending {
			return rows, last, nil
		}
	}
}

// liveEvents serves a task page's live activity as Server-Sent Events:
// each line after the stream sequence after (or the browser's
// Last-Event-ID, when it reconnects) as one message, its id the line's
// stream sequence. It takes a slot of Config.MaxEventStreams and bounds its
// writes as the events stream does.
func (s *Server) liveEvents(w http.ResponseWriter, r *http.Request) {
	wf, id := r.PathValue("wf"), r.PathValue("task")
	if err := errors.Join(subjects.ValidateID(wf), subjects.ValidateID(id)); err != nil {
		http.Error(w, "bad task: "+err.Error(), http.StatusBadRequest)
		return
	}
	after, _ := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
	if last, err := strconv.ParseUint(r.Header.Get("Last-Event-ID"), 10, 64); err == nil && last > after {
		after = last
	}
	release, ok := s.takeStream(w)
	if !ok {
		return
	}
	defer release()
	rc := http.NewResponseController(w)
	send := func(b []byte) error {
		if err := rc.SetWriteDeadline(time.Now().Add(s.sseWait)); err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	if err := rc.SetWriteDeadline(time.Now().Add(s.sseWait)); err != nil {
		http.Error(w, "event stream: cannot bound its writes: "+err.Error(), http.StatusInternalServerError)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-s.stopped:
			cancel()
		case <-ctx.Done():
		}
	}()
	cons, err := s.liveConsumer(ctx, wf, id, after+1)
	if err != nil {
		http.Error(w, "live stream: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer streamread.DeleteConsumer(ctx, streamread.StreamOf(s.js, s.names.LiveStream()), cons)
	it, err := cons.Messages()
	if err != nil {
		http.Error(w, "live stream: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer it.Stop()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	if send([]byte("retry: 2000\n: hello\n\n")) != nil {
		return
	}
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		for {
			msg, err := it.Next(jetstream.NextContext(ctx))
			if err != nil {
				return
			}
			md, err := msg.Metadata()
			if err != nil {
				return
			}
			row, ok := liveRowOf(md.Sequence.Stream, msg.Data())
			if !ok {
				continue
			}
			b, _ := json.Marshal(row)
			out := append([]byte("id: "+strconv.FormatUint(row.Seq, 10)+"\ndata: "), b...)
			select {
			case lines <- append(out, '\n', '\n'):
			case <-ctx.Done():
				return
			}
		}
	}()
	t := time.NewTicker(keepAlive)
	defer t.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			err = send([]byte(": ping\n\n"))
		case b, ok := <-lines:
			if !ok {
				return
			}
			err = send(b)
		}
		if err != nil {
			return
		}
	}
}
