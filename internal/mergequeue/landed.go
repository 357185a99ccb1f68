package mergequeue

import (
	"context"
	"fmt"
)

// LogPush is the kind of the record a merger writes just before it pushes
// a batch: the commit it is about to push and the entries it holds. Whether
// the push landed is read from git (the commit is in the target's history),
// never from commit messages.
const LogPush = "push"

// landed is the merge log's account of which target commits brought which
// entries: entry key -> the batch commits (pushed or about to be) that
// hold it. Only mergers write the log, so an agent cannot add to it.
type landed map[string][]string

// add notes that commit holds the entries keys.
func (l landed) add(commit string, keys []string) {
	for _, k := range keys {
		l[k] = append(l[k], commit)
	}
}

// loadLanded reads the target's merge log into an index of what each
// batch brought. A session starts with it, then adds its own batches.
func (m *Merger) loadLanded(ctx context.Context) (landed, error) {
	recs, err := ReadLog(ctx, m.js, m.names, m.cfg.Target)
	if err != nil {
		return nil, fmt.Errorf("mergequeue: reading the merge log of %s: %w", m.cfg.Target, err)
	}
	l := landed{}
	for _, r := range recs {
		if (r.Kind == LogPush || r.Kind == LogBatch) && r.Commit != "" && r.Commit != r.Before {
			l.add(r.Commit, r.Merged)
		}
	}
	return l, nil
}

// onTarget reports whether tip already holds e: its head is in tip's
// history (a merge commit, a fast-forward), or a batch commit the merge
// log says brought e (a rebase, whose commits are copies) is.
func (m *Merger) onTarget(ctx context.Context, tip string, e Entry) bool {
	if m.repo.Merged(ctx, tip, e.Head) {
		return true
	}
	for _, c := range m.landed[e.Key()] {
		if m.repo.Merged(ctx, tip, c) {
			return true
		}
	}
	return false
}
