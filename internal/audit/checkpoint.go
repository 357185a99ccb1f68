package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/subjects"
)

// RuleRegression: the audit stream is behind a checkpoint taken of it: it
// ends before the checkpoint's last sequence, or the event stored there is
// not the one the checkpoint saw (a store rolled back, or restored from an
// older copy).
const RuleRegression = "regression"

// Checkpoint is what `drover audit checkpoint` records of the audit stream,
// to be kept outside NATS: its last sequence and the link (see Link) of the
// event stored there, which by the hash chain covers that event's task's
// whole record.
type Checkpoint struct {
	Stream  string    `json:"stream"`
	LastSeq uint64    `json:"last_seq"`
	Link    string    `json:"link"`
	Subject string    `json:"subject,omitempty"`
	Time    time.Time `json:"time"`
}

// TakeCheckpoint reads the audit stream's last sequence and the link of the
// event stored there. An empty stream gives a checkpoint of sequence 0.
func TakeCheckpoint(ctx context.Context, js jetstream.JetStream, names subjects.Names) (Checkpoint, error) {
	cp := Checkpoint{Stream: names.AuditStream(), Time: time.Now().UTC()}
	s, err := js.Stream(ctx, cp.Stream)
	if err != nil {
		return cp, fmt.Errorf("audit: checkpoint: stream %s: %w", cp.Stream, err)
	}
	st := s.CachedInfo().State
	if st.Msgs == 0 {
		return cp, nil
	}
	m, err := s.GetMsg(ctx, st.LastSeq)
	if err != nil {
		return cp, fmt.Errorf("audit: checkpoint: event %d: %w", st.LastSeq, err)
	}
	cp.LastSeq, cp.Subject = st.LastSeq, m.Subject
	cp.Link = LinkHex(m.Subject, m.Header.Get(subjects.HeaderPrev), m.Data)
	return cp, nil
}

// ParseCheckpoint reads a checkpoint as TakeCheckpoint's JSON; b is
// untrusted (a file), bounded by the caller.
func ParseCheckpoint(b []byte) (Checkpoint, error) {
	var cp Checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return cp, fmt.Errorf("audit: checkpoint: %w", err)
	}
	if cp.LastSeq > 0 && len(cp.Link) != 64 {
		return cp, errors.New("audit: checkpoint: link is not a hex SHA-256")
	}
	return cp, nil
}

// checkCheckpoint compares the audit stream with cp: a violation when the
// stream ends before cp.LastSeq or the event there has another link.
func checkCheckpoint(ctx context.Context, s jetstream.Stream, last uint64, cp Checkpoint) (*Violation, error) {
	if cp.LastSeq == 0 {
		return nil, nil
	}
	if last < cp.LastSeq {
		return &Violation{Seq: last, Subject: cp.Subject, Rule: RuleRegression,
			Detail: fmt.Sprintf("the stream ends at sequence %d, before the checkpoint's %d (taken %s): events were lost, the store rolled back",
				last, cp.LastSeq, cp.Time.Format(time.RFC3339))}, nil
	}
	m, err := s.GetMsg(ctx, cp.LastSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return &Violation{Seq: cp.LastSeq, Subject: cp.Subject, Rule: RuleRegression,
			Detail: fmt.Sprintf("the checkpoint's event %d is gone", cp.LastSeq)}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: verify: checkpoint event %d: %w", cp.LastSeq, err)
	}
	if got := LinkHex(m.Subject, m.Header.Get(subjects.HeaderPrev), m.Data); got != cp.Link {
		return &Violation{Seq: cp.LastSeq, EventID: m.Header.Get(subjects.HeaderMsgID), Subject: m.Subject, Rule: RuleRegression,
			Detail: fmt.Sprintf("the event at the checkpoint's sequence is not the one it saw (link %.12s, checkpoint %.12s, taken %s): the store rolled back and was written again, or was edited",
				got, cp.Link, cp.Time.Format(time.RFC3339))}, nil
	}
	return nil, nil
}
