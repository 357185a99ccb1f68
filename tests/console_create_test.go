package tests

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

// The console as a place to work, in headless Chromium against a real
// worker (sim runners): a task created from the New task form completes
// and its workflow shows as finished, its card showing the scope's first
// line; a create without the CSRF token is refused; a pasted board runs
// its tasks.
func TestConsoleCreate(t *testing.T) {
	b := setup(t)
	simWorker(b, runner.NewSim(runner.SimOptions{}), 4)
	ui := newConsoleUI(t, b)
	setValue := func(sel, v string) chromedp.Action[chromedp.Void] {
		return chromedp.SetValue(chromedp.CSS(sel), v)
	}

	t.Run("a task created in the browser completes", func(t *testing.T) {
		ui.t = t
		ui.open("/new")
		scope := "Add a <b>health</b> endpoint\nIt answers 200 on GET /livez."
		ui.do(setValue(`#newtask input[name="workflow"]`, "wf-ui"), setValue(`#newtask input[name="id"]`, "U1"),
			setValue(`#newtask textarea[name="scope"]`, scope), setValue(`#newtask textarea[name="verification"]`, "GET /livez is 200"))
		ui.shot("new-task")
		ui.do(chromedp.Click(chromedp.ID("create")))
		// Accepted by the worker: the console shows the task.
		ui.poll(`location.pathname === "/tasks/wf-ui/U1" && document.getElementById("scope") !== null`)
		require.Equal(t, scope, evalJS[string](ui, `document.getElementById("scope").textContent`))
		b.waitTerminal("wf-ui", 0, 1)
		ui.openListed("/workflows/wf-ui")
		ui.poll(`document.getElementById("wfstate").textContent === "finished" && document.querySelectorAll('.col[data-col="done"] .card').length === 1`)
		require.Equal(t, "Add a <b>health</b> endpoint", evalJS[string](ui, `document.querySelector('.col[data-col="done"] .card .title').textContent`))
		require.NotEqual(t, "–", evalJS[string](ui, `document.querySelector('.col[data-col="done"] .card .el').textContent`), "the card shows the elapsed time")
		require.Zero(t, evalJS[int](ui, `document.querySelectorAll("main b").length`), "the scope stays text")
		ui.shot("board-created")
		ui.open("/workflows")
		ui.poll(`document.querySelector('tr[data-wf="wf-ui"] [data-x="state"]').textContent === "finished"`)
	})

	t.Run("a running card's elapsed time counts on", func(t *testing.T) {
		ui.t = t
		after := b.submit(withSim(task("wf-tick", "S1"), `{"latency_ms": {"implementer": 4000}}`))
		waitState(t, b, "wf-tick", "S1")
		ui.openListed("/workflows/wf-tick")
		ui.poll(`document.querySelector('.card[data-task="S1"][data-run]') !== null`)
		first := evalJS[string](ui, `document.querySelector('.card[data-task="S1"] .el').textContent`)
		ui.poll(fmt.Sprintf(`document.querySelector('.card[data-task="S1"] .el').textContent !== %q`, first))
		b.waitTerminal("wf-tick", after, 1)
		ui.poll(`document.getElementById("wfstate").textContent === "finished" && document.querySelector('.card[data-task="S1"][data-run]') === null`)
	})

	t.Run("a create without the CSRF token is refused", func(t *testing.T) {
		ui.t = t
		ui.open("/new")
		ui.do(setValue(`#newtask input[name="workflow"]`, "wf-forged"), setValue(`#newtask input[name="id"]`, "F1"),
			setValue(`#newtask textarea[name="scope"]`, "forged"),
			chromedp.Evaluate[chromedp.Void](`document.querySelector('#newtask input[name="csrf"]').remove()`))
		ui.do(chromedp.Click(chromedp.ID("create")))
		ui.poll(`document.querySelector("main h1") && document.querySelector("main h1").textContent.startsWith("403")`)
		require.Contains(t, evalJS[string](ui, `document.querySelector("main .err").textContent`), "CSRF")
		info, err := b.js.Stream(context.Background(), b.names.TasksStream())
		require.NoError(t, err)
		// Nothing was published: no request waits and no task has state.
		require.Zero(t, info.CachedInfo().State.Msgs)
		kv, err := b.js.KeyValue(context.Background(), b.names.StateBucket())
		require.NoError(t, err)
		_, err = state.New(kv).GetTask(context.Background(), "wf-forged", "F1")
		require.ErrorIs(t, err, state.ErrNotFound)
	})

	t.Run("a board submitted from the browser runs its tasks", func(t *testing.T) {
		ui.t = t
		board := "# Sprint\n\n| ID | Scope | Status |\n|----|-------|--------|\n| B1 | Write the README | [ ] |\n| B2 | Done before | [x] |\n| B3 | Add the CI job | [ ] |\n"
		ui.open("/new")
		ui.do(setValue(`#newboard input[name="workflow"]`, "wf-board-ui"), setValue(`#newboard textarea[name="board"]`, board))
		ui.do(chromedp.Click(chromedp.ID("submitboard")))
		ui.poll(`document.getElementById("created") && document.querySelectorAll("#created li").length === 2`)
		b.waitTerminal("wf-board-ui", 0, 2)
		ui.openListed("/workflows/wf-board-ui")
		ui.poll(`document.getElementById("wfstate").textContent === "finished" && document.querySelectorAll('.col[data-col="done"] .card').length === 2`)
		titles := evalJS[[]string](ui, `Array.from(document.querySelectorAll('.col[data-col="done"] .card .title')).map(e => e.textContent)`)
		require.Equal(t, []string{"Write the README", "Add the CI job"}, titles)
		require.Equal(t, 2, b.status("wf-board-ui").Counts[subjects.StateCompleted])
		require.NotContains(t, evalJS[string](ui, `document.body.innerText`), "B2", "a done row is not submitted")
	})
}
