package retention

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/blobs"
	"github.com/droverhq/drover/internal/streamread"
)

// blobs removes old blobs that nothing kept refers to. The audit stream is
// read only when some old blob is referred to by no kept state and no
// cached result, and only as far as its last message when the read began.
func (r *run) blobs(ctx context.Context) error {
	infos, err := r.s.Blobs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("gc: list blobs: %w", err)
	}
	var candidates []*jetstream.ObjectInfo
	for _, info := range infos {
		age := r.since(info.ModTime)
		switch {
		case r.inUse[info.Name]:
			r.add(Item{Kind: KindBlob, Name: info.Name, Why: "referred to by kept state or a cached result", Age: age})
		case age <= r.opts.BlobMinAge:
			r.add(Item{Kind: KindBlob, Name: info.Name, Why: "within the blob retention", Age: age})
		case r.opts.BlobMaxAge > 0 && age > r.opts.BlobMaxAge:
			if err := r.removeBlob(ctx, info, "older than --blob-max-age; audit events that refer to it can no longer show its value"); err != nil {
				return err
			}
		default:
			candidates = append(candidates, info)
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	inAudit, err := r.auditRefs(ctx)
	if err != nil {
		return err
	}
	for _, info := range candidates {
		if inAudit[info.Name] {
			r.add(Item{Kind: KindBlob, Name: info.Name, Why: "referred to by the audit stream (the permanent record)", Age: r.since(info.ModTime)})
			continue
		}
		if err := r.removeBlob(ctx, info, "referred to by nothing, older than the blob retention"); err != nil {
			return err
		}
	}
	return nil
}

// removeBlob deletes a blob, unless it was written again since it was
// listed (a task stored the same value again: it is in use).
func (r *run) removeBlob(ctx context.Context, info *jetstream.ObjectInfo, why string) error {
	age := r.since(info.ModTime)
	if !r.opts.DryRun {
		cur, err := r.s.Blobs.GetInfo(ctx, info.Name)
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("gc: blob %s: %w", info.Name, err)
		}
		if !cur.ModTime.Equal(info.ModTime) {
			r.add(Item{Kind: KindBlob, Name: info.Name, Why: "written again since it was listed", Age: r.since(cur.ModTime)})
			return nil
		}
		if err := r.s.Blobs.Delete(ctx, info.Name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return fmt.Errorf("gc: remove blob %s: %w", info.Name, err)
		}
	}
	r.add(Item{Kind: KindBlob, Name: info.Name, Removed: true, Why: why, Age: age})
	return nil
}

// auditRefs returns the blobs the audit stream refers to. It reads every
// event once (only those that hold a reference are decoded): the one read
// of the whole stream in Drover, as a blob's name is a hash that no
// subject can filter on.
func (r *run) auditRefs(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	info, err := r.s.Audit.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("gc: audit stream: %w", err)
	}
	last := info.State.LastSeq
	if info.State.Msgs == 0 {
		return out, nil
	}
	cons, err := r.s.Audit.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return nil, fmt.Errorf("gc: audit stream: %w", err)
	}
	defer streamread.DeleteConsumer(ctx, r.s.Audit, cons)
	for {
		batch, err := cons.Fetch(256, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, fmt.Errorf("gc: read the audit stream: %w", err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			if bytes.Contains(msg.Data(), []byte(`"blob"`)) {
				blobs.Refs(msg.Data(), func(name string) { out[name] = true })
			}
			md, err := msg.Metadata()
			if err != nil {
				return nil, err
			}
			if md.Sequence.Stream >= last || md.NumPending == 0 {
				return out, nil
			}
		}
		if err := batch.Error(); err != nil {
			return nil, fmt.Errorf("gc: read the audit stream: %w", err)
		}
		if n == 0 {
			return nil, fmt.Errorf("gc: read the audit stream: no message within 5s before sequence %d", last)
		}
	}
}
