package tests

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/lessons"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/prompt"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// lessonReading is a runner.Func that declares it uses lessons, as a
// planner whose prompt template shows them does.
type lessonReading struct{ runner.Func }

// UsesLessons implements runner.LessonReader.
func (lessonReading) UsesLessons() bool { return true }

// plannerInputs records the lessons each task's planner received.
type plannerInputs struct {
	mu  sync.Mutex
	got map[string][]string
}

func (p *plannerInputs) of(task string) ([]string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.got[task]
	return l, ok
}

func TestPlannerGetsLessonsOfItsType(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sim := runner.NewSim(runner.SimOptions{})
	inputs := &plannerInputs{got: map[string][]string{}}
	planner := lessonReading{runner.Func{ID: "recording-planner/v1", F: func(ctx context.Context, req runner.Request) (runner.Result, error) {
		inputs.mu.Lock()
		inputs.got[req.Task.ID] = req.Lessons
		inputs.mu.Unlock()
		return sim.Run(ctx, req)
	}}}
	book, err := lessons.New(lessons.Deps{JS: b.js, Names: b.names, Log: natstest.Quiet()}, lessons.Config{})
	require.NoError(t, err)
	b.startWorker(worker.Config{
		Concurrency: 2,
		Runners:     runner.Set{Planner: planner, Implementer: sim, Judge: sim},
		Lessons:     book,
	})

	const wf = "lessons"
	a := withSim(task(wf, "A"), `{"judge_rejects": 1}`)
	a.Type = "refactor"
	after := b.submit(a)
	ends := b.waitTerminal(wf, after, 1)
	require.Equal(t, subjects.EventTaskCompleted, ends["A"].EventType)
	got, ok := inputs.of("A")
	require.True(t, ok)
	require.Empty(t, got, "no lesson existed before A")

	recorded, err := book.Lookup(context.Background(), "refactor", wf, 10)
	require.NoError(t, err)
	require.Len(t, recorded, 1, "A's rejection taught one lesson")
	l := recorded[0]
	require.Equal(t, subjects.RoleJudge, l.Role)
	require.Equal(t, "A", l.Task)
	require.Equal(t, 1, l.Attempt)
	require.Equal(t, "rejected", l.Kind)
	require.NotEmpty(t, l.Feedback)
	require.Equal(t, subjects.EventID(wf, "A", 1, subjects.ActorOf(subjects.RoleJudge), subjects.EventJudgeVerdict, 0), l.EventID)

	bTask, cTask := task(wf, "B"), task(wf, "C")
	bTask.Type, cTask.Type = "refactor", "docs"
	after = b.submit(bTask, cTask)
	ends = b.waitTerminal(wf, after, 2)
	require.Equal(t, subjects.EventTaskCompleted, ends["B"].EventType)
	require.Equal(t, subjects.EventTaskCompleted, ends["C"].EventType)

	got, _ = inputs.of("B")
	require.Equal(t, []string{lessons.Format(l)}, got, "B's planner sees A's lesson")
	require.Contains(t, got[0], "[judge, attempt 1, rejected] the judge rejected attempt 1: ")
	require.Contains(t, got[0], l.Feedback)
	// The default planner prompt of B shows the lesson.
	text, err := prompt.Defaults().Render(subjects.RolePlanner, prompt.Data{Role: subjects.RolePlanner, Task: bTask.WithDefaults(), Attempt: 1, Lessons: got})
	require.NoError(t, err)
	require.Contains(t, text, "Lessons from earlier tasks of this type:")
	require.Contains(t, text, got[0])
	got, ok = inputs.of("C")
	require.True(t, ok)
	require.Empty(t, got, "a docs task gets no refactor lessons")

	// Lessons are scoped to their workflow: a refactor task of another
	// workflow recalls none of A's.
	dTask := task("lessons-other", "D")
	dTask.Type = "refactor"
	after = b.submit(dTask)
	ends = b.waitTerminal("lessons-other", after, 1)
	require.Equal(t, subjects.EventTaskCompleted, ends["D"].EventType)
	got, ok = inputs.of("D")
	require.True(t, ok)
	require.Empty(t, got, "another workflow's planner does not see A's lesson")
}
