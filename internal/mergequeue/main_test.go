package mergequeue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/droverhq/drover/internal/mergequeue"
	"github.com/droverhq/drover/internal/workspace"
	"github.com/droverhq/drover/subjects"
)

// childEnv marks the test binary started as a merger process by a test.
const childEnv = "MERGEQ_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		if err := runChild(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// outcome is what a child's sink reports to the test over NATS.
type outcome struct {
	Holder   string           `json:"holder"`
	Entry    mergequeue.Entry `json:"entry"`
	Commit   string           `json:"commit,omitempty"`
	Feedback string           `json:"feedback,omitempty"`
}

// natsSink reports each outcome with a request the test answers, so an
// entry is acked only once the test has it.
type natsSink struct {
	nc     *nats.Conn
	holder string
}

func (s natsSink) send(subject string, o outcome) error {
	data, _ := json.Marshal(o)
	_, err := s.nc.Request(subject, data, 30*time.Second)
	return err
}

func (s natsSink) Wanted(context.Context, mergequeue.Entry) (mergequeue.Want, error) {
	return mergequeue.WantMerge, nil
}

func (s natsSink) Merged(_ context.Context, e mergequeue.Entry, _, commit string) error {
	return s.send("mqtest.merged", outcome{Holder: s.holder, Entry: e, Commit: commit})
}

func (s natsSink) SendBack(_ context.Context, e mergequeue.Entry, feedback, base string) error {
	return s.send("mqtest.back", outcome{Holder: s.holder, Entry: e, Commit: base, Feedback: feedback})
}

// runChild is one merger process: it merges until SIGTERM (or SIGKILL).
func runChild() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	var check []string
	_ = json.Unmarshal([]byte(os.Getenv("MQ_CHECK")), &check)
	batch, _ := strconv.Atoi(os.Getenv("MQ_BATCH"))
	cfg := mergequeue.Config{Target: "main", Batch: batch, LeaseTTL: 2 * time.Second,
		// The check's environment is built: it gets only the variables named.
		Check: workspace.Command{Argv: check, Timeout: time.Minute, Env: []string{"MQ_MARK", "MQ_HOLDER"}}}
	nc, err := nats.Connect(os.Getenv("MQ_NATS"))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ws, err := workspace.New(workspace.Deps{}, workspace.Config{Repo: os.Getenv("MQ_REMOTE"), Dir: os.Getenv("MQ_DIR")})
	if err != nil {
		return err
	}
	if err := ws.Start(ctx); err != nil {
		return err
	}
	defer func() { _ = ws.Close() }() // the process ends
	holder := os.Getenv("MQ_HOLDER")
	m, err := mergequeue.New(ctx, mergequeue.Deps{JS: js, Names: mergequeue.NewNames(subjects.MustNames(subjects.DefaultPrefix)),
		Repo: mergequeue.GitRepo{M: ws}, Sink: natsSink{nc: nc, holder: holder}, Holder: holder}, cfg)
	if err != nil {
		return err
	}
	return m.Run(ctx)
}
