package runner

import (
	"encoding/json"
	"os"
	"time"

	"github.com/droverhq/drover/subjects"
)

// CallLogLine is one line of a Sim's call log.
type CallLogLine struct {
	Role     subjects.Role `json:"role"`
	Workflow string        `json:"workflow"`
	Task     string        `json:"task"`
	Attempt  int           `json:"attempt"`
	Try      int           `json:"try"`
	Time     time.Time     `json:"time"`
	// PID is the process that made the call; InFlight is how many calls
	// that process's sim runner had running, this one included.
	PID      int   `json:"pid"`
	InFlight int64 `json:"in_flight"`
}

// appendCallLog appends one JSON line for req to path. The file is opened
// with O_APPEND and the line is written with a single write, so concurrent
// writers, also in other processes, never interleave within a line.
func appendCallLog(path string, req Request, inFlight int64, now time.Time) error {
	line, err := json.Marshal(CallLogLine{
		Role:     req.Role,
		Workflow: req.Task.Workflow,
		Task:     req.Task.ID,
		Attempt:  req.Attempt,
		Try:      req.Try,
		Time:     now.UTC(),
		PID:      os.Getpid(),
		InFlight: inFlight,
	})
	if err != nil {
		return err
	}
	line = append(line, '\n')
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(line); err != nil {
		_ = f.Close() // the write already failed: that error is returned
		return err
	}
	return f.Close()
}
