package mergequeue

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// lease is one merger's hold on a target: a key of the lease bucket created
// by the holder, renewed with compare-and-set, and gone when the bucket's
// age limit passes without a renewal.
type lease struct {
	kv     jetstream.KeyValue
	key    string
	holder string
	rev    uint64
}

// acquire creates the key; false when another merger holds it.
func acquire(ctx context.Context, kv jetstream.KeyValue, key, holder string) (*lease, bool, error) {
	rev, err := kv.Create(ctx, key, []byte(holder))
	switch {
	case errors.Is(err, jetstream.ErrKeyExists):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("mergequeue: lease: %w", err)
	}
	return &lease{kv: kv, key: key, holder: holder, rev: rev}, true, nil
}

// renew writes the key again if it is still this holder's; ErrLeaseLost
// if it is not.
func (l *lease) renew(ctx context.Context) error {
	rev, err := l.kv.Update(ctx, l.key, []byte(l.holder), l.rev)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %v", ErrLeaseLost, err)
	}
	l.rev = rev
	return nil
}

// release deletes the key if it is still this holder's.
func (l *lease) release(ctx context.Context) {
	_ = l.kv.Delete(ctx, l.key, jetstream.LastRevision(l.rev))
}
