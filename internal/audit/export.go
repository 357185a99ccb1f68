package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/droverhq/drover/subjects"
)

// Export formats.
const (
	// FormatJSONL writes each event's body as one line of JSON.
	FormatJSONL = "jsonl"
	// FormatCloudEvents writes each event as one line of CloudEvents 1.0
	// structured JSON: the ce-* attributes the event was published with,
	// the stream sequence as the extension drover_seq, and the body as
	// data.
	FormatCloudEvents = "cloudevents"
)

// Exporter writes records one at a time in an export format; it holds no
// record after writing it, so an export of any size runs in bounded
// memory.
type Exporter struct {
	w      io.Writer
	format string
	buf    bytes.Buffer
	// N counts the records written.
	N int64
}

// NewExporter returns an exporter writing format to w (buffer w: each
// record is one Write).
func NewExporter(w io.Writer, format string) (*Exporter, error) {
	if format != FormatJSONL && format != FormatCloudEvents {
		return nil, fmt.Errorf("format %q: want %s or %s", format, FormatJSONL, FormatCloudEvents)
	}
	return &Exporter{w: w, format: format}, nil
}

// cloudEvent is the structured form of a CloudEvent.
type cloudEvent struct {
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Type            string          `json:"type"`
	Subject         string          `json:"subject,omitempty"`
	Time            string          `json:"time,omitempty"`
	DataContentType string          `json:"datacontenttype"`
	TraceParent     string          `json:"traceparent,omitempty"`
	Seq             uint64          `json:"drover_seq"`
	Data            json.RawMessage `json:"data"`
}

// Write writes one record. A record whose body is not JSON is an error.
func (x *Exporter) Write(r Record) error {
	x.buf.Reset()
	body := r.Data
	if len(body) == 0 {
		b, err := json.Marshal(r.Event)
		if err != nil {
			return err
		}
		body = b
	}
	switch x.format {
	case FormatJSONL:
		if err := json.Compact(&x.buf, body); err != nil {
			return fmt.Errorf("audit: event %d on %s is not JSON: %w", r.Seq, r.Subject, err)
		}
	case FormatCloudEvents:
		var data bytes.Buffer
		if err := json.Compact(&data, body); err != nil {
			return fmt.Errorf("audit: event %d on %s is not JSON: %w", r.Seq, r.Subject, err)
		}
		b, err := json.Marshal(x.cloudEvent(r, data.Bytes()))
		if err != nil {
			return err
		}
		x.buf.Write(b)
	}
	x.buf.WriteByte('\n')
	if _, err := x.w.Write(x.buf.Bytes()); err != nil {
		return err
	}
	x.N++
	return nil
}

// cloudEvent builds r's structured CloudEvent from the attributes it was
// published with; an event stored without them gets them from its body.
func (x *Exporter) cloudEvent(r Record, data []byte) cloudEvent {
	h := r.Headers
	get := func(k, def string) string {
		if v := h.Get(k); v != "" {
			return v
		}
		return def
	}
	ev := r.Event
	t := ""
	if !ev.Timestamp.IsZero() {
		t = ev.Timestamp.UTC().Format(time.RFC3339Nano)
	}
	return cloudEvent{
		SpecVersion:     "1.0",
		ID:              get(subjects.HeaderCEID, get(subjects.HeaderMsgID, ev.EventID)),
		Source:          get(subjects.HeaderCESource, "drover/"+strings.SplitN(r.Subject, ".", 2)[0]),
		Type:            get(subjects.HeaderCEType, "dev.drover."+string(ev.EventType)),
		Subject:         get(subjects.HeaderCESubject, subjects.IDToken(ev.WorkflowID)+"/"+subjects.IDToken(ev.TaskID)),
		Time:            get(subjects.HeaderCETime, t),
		DataContentType: "application/json",
		TraceParent:     h.Get(subjects.HeaderTraceparent),
		Seq:             r.Seq,
		Data:            data,
	}
}
