package lessons

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/streamread"
	"github.com/droverhq/drover/subjects"
)

// Lookup returns the most recent n lessons of a type (n <= 0: all the
// stream keeps), oldest first: those recorded in workflow, or in any
// workflow when workflow is "". It reads only the subjects of that scope
// and the type's legacy subject, whose lessons it keeps only when their
// body names workflow. The last message's sequence comes first from direct
// gets, so an unknown type answers at once; then an ordered consumer
// filtered to the subjects reads up to that message. A lesson whose event
// ID was already read (recorded again after the duplicate window) is
// skipped.
func (b *Book) Lookup(ctx context.Context, taskType, workflow string, n int) ([]subjects.Lesson, error) {
	if taskType == "" {
		taskType = subjects.DefaultTaskType
	}
	scoped := b.names.LessonsTypeWildcard(taskType)
	if workflow != "" {
		scoped = b.names.LessonsWorkflowSubject(taskType, workflow)
	}
	legacy := b.names.LessonsSubject(taskType)
	var out []subjects.Lesson
	err := b.scan(ctx, []string{scoped, legacy}, func(subject string, l subjects.Lesson) error {
		if workflow != "" && subject == legacy && l.Workflow != workflow {
			return nil
		}
		out = append(out, l)
		if n > 0 && len(out) > n {
			out = out[len(out)-n:]
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lessons: type %q: %w", taskType, err)
	}
	return out, nil
}

// List calls fn with each lesson of a type (taskType "": of every type), of
// every workflow, in the order they were recorded. A non-nil error from fn
// stops the listing and is returned as it is.
func (b *Book) List(ctx context.Context, taskType string, fn func(subjects.Lesson) error) error {
	filters := []string{b.names.LessonsWildcard()}
	if taskType != "" {
		filters = []string{b.names.LessonsTypeWildcard(taskType), b.names.LessonsSubject(taskType)}
	}
	var fnErr error
	err := b.scan(ctx, filters, func(_ string, l subjects.Lesson) error {
		fnErr = fn(l)
		return fnErr
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return fmt.Errorf("lessons: list %s: %w", strings.Join(filters, ", "), err)
	}
	return nil
}

// lessonsStream returns the lessons stream, looked up once per Book. Its
// cached info tells the client that direct gets are allowed.
func (b *Book) lessonsStream(ctx context.Context) (jetstream.Stream, error) {
	b.mu.Lock()
	st := b.stream
	b.mu.Unlock()
	if st != nil {
		return st, nil
	}
	st, err := b.js.Stream(ctx, b.names.LessonsStream())
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.stream = st
	b.mu.Unlock()
	return st, nil
}

// scan calls fn with each lesson on filters, and its subject, in stream
// order, up to the last one stored when it began. An undecodable message is
// an error: the stream holds only what Record wrote, so it means something
// else writes there.
func (b *Book) scan(ctx context.Context, filters []string, fn func(string, subjects.Lesson) error) error {
	st, err := b.lessonsStream(ctx)
	if err != nil {
		return err
	}
	var last uint64
	for _, f := range filters {
		m, err := st.GetLastMsgForSubject(ctx, f)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		last = max(last, m.Sequence)
	}
	if last == 0 {
		return nil
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: filters})
	if err != nil {
		return err
	}
	defer streamread.DeleteConsumer(ctx, st, cons)
	it, err := cons.Messages()
	if err != nil {
		return err
	}
	defer it.Stop()
	seen := map[string]bool{}
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return err
		}
		md, err := msg.Metadata()
		if err != nil {
			return err
		}
		var l subjects.Lesson
		if err := json.Unmarshal(msg.Data(), &l); err != nil {
			return fmt.Errorf("message %d on %s does not decode as a lesson: %w", md.Sequence.Stream, msg.Subject(), err)
		}
		if l.EventID == "" || !seen[l.EventID] {
			seen[l.EventID] = true
			if err := fn(msg.Subject(), l); err != nil {
				return err
			}
		}
		if md.Sequence.Stream >= last || md.NumPending == 0 {
			return nil
		}
	}
}
