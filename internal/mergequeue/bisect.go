package mergequeue

import (
	"context"
	"fmt"

	"github.com/droverhq/drover/internal/workspace"
)

// culprit is an entry that cannot go onto the target, and why.
type culprit struct {
	entry  Entry
	reason string // "conflict" or "check"
	output string
}

// builder brings entries onto a commit in a scratch tree.
type builder struct {
	tree   Tree
	check  workspace.Command
	rebase bool
	steps  int // merges and checks run (tests read it)
}

// apply merges es onto base in order and runs the check on the result; the
// first failure is returned with the entry that caused it when it is known
// (a conflict), or nil (a check fails for the whole set).
func (b *builder) apply(ctx context.Context, base string, es []Entry) (string, *culprit, error) {
	if err := b.tree.Reset(ctx, base); err != nil {
		return "", nil, err
	}
	head := base
	for _, e := range es {
		b.steps++
		h, err := b.tree.Merge(ctx, e.Head, fmt.Sprintf("Merge %s (%s/%s)", e.Branch, e.Workflow, e.Task), b.rebase)
		if err != nil {
			if isConflict(err) {
				return "", &culprit{entry: e, reason: "conflict", output: err.Error()}, nil
			}
			return "", nil, err
		}
		head = h
	}
	if len(b.check.Argv) > 0 {
		b.steps++
		if err := b.tree.Run(ctx, b.check); err != nil {
			if ctx.Err() != nil {
				return "", nil, ctx.Err()
			}
			return "", &culprit{reason: "check", output: err.Error()}, nil
		}
	}
	return head, nil, nil
}

// fit brings as many of es onto base as go cleanly, in order, splitting
// the batch in halves on a failure until each failing entry stands alone.
// It returns the resulting commit, the entries in it and the culprits.
func (b *builder) fit(ctx context.Context, base string, es []Entry) (string, []Entry, []culprit, error) {
	if len(es) == 0 {
		return base, nil, nil, nil
	}
	head, bad, err := b.apply(ctx, base, es)
	switch {
	case err != nil:
		return "", nil, nil, err
	case bad == nil:
		return head, es, nil, nil
	case len(es) == 1:
		bad.entry = es[0]
		return base, nil, []culprit{*bad}, nil
	}
	mid := len(es) / 2
	h1, g1, c1, err := b.fit(ctx, base, es[:mid])
	if err != nil {
		return "", nil, nil, err
	}
	h2, g2, c2, err := b.fit(ctx, h1, es[mid:])
	if err != nil {
		return "", nil, nil, err
	}
	return h2, append(g1, g2...), append(c1, c2...), nil
}
