package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

// boardServer is a console whose mirror holds one workflow of n tasks
// spread over every column; it needs no NATS to render the board.
func boardServer(tb testing.TB, n int) *Server {
	tb.Helper()
	s, err := New(Deps{Names: subjects.MustNames(subjects.DefaultPrefix), Log: natstest.Quiet()}, Config{AllowedHosts: []string{"example.com"}})
	require.NoError(tb, err)
	stages := []struct{ state, stage string }{
		{subjects.StateCompleted, subjects.StageDone}, {subjects.StateRunning, "planner"}, {subjects.StateRunning, "implementer"},
		{subjects.StateRunning, "judge"}, {subjects.StateFailed, subjects.StageDone},
	}
	now := time.Now()
	for i := range n {
		st := stages[i%len(stages)]
		task := fmt.Sprintf("T%05d", i)
		b, _ := json.Marshal(subjects.TaskState{Workflow: "big", Task: task, State: st.state, Stage: st.stage, Worker: "w",
			Attempt: 1, StartedAt: now.Add(-time.Minute), UpdatedAt: now})
		s.mirror.apply(subjects.StateKey("big", task), b, false)
	}
	close(s.mirror.ready)
	return s
}

// The first screen of a 10,000-task board: the server's time to answer,
// from the mirror (go test -bench Board10k ./internal/console/).
func BenchmarkBoard10k(b *testing.B) {
	s := boardServer(b, 10_000)
	h := s.Handler()
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/workflows/big", nil))
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}

// A board page shows at most pageSize cards per column, however many
// tasks the workflow has, and counts every task.
func TestBoardPaged(t *testing.T) {
	s := boardServer(t, 10_000)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/workflows/big", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	body := rec.Body.String()
	require.Contains(t, body, `<span id="total">10000</span>`)
	require.Contains(t, body, `data-count="done">2000<`)
	require.Contains(t, body, `+1800 more`)
	cards := 0
	for i := 0; i+len(`class="card"`) <= len(body); i++ {
		if body[i:i+len(`class="card"`)] == `class="card"` {
			cards++
		}
	}
	require.Equal(t, 5*pageSize, cards)

	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/workflows/big?page=9", nil))
	require.Contains(t, rec.Body.String(), `data-task="T09995"`, "the last page holds the last tasks")
}
