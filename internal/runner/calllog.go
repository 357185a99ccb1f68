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
}

// appendCallLog appends one JSON line for req to path. The file is opened
// with O_APPEND and the line is written with a single write, so concurrent
// writers, also in other processes, never interleave within a line.
func appendCallLog(path string, req Request, now time.Time) error {
	line, err := json.Marshal(CallLogLine{
		Role:     req.Role,
		Workflow: req.Task.Workflow,
		Task:     req.Task.ID,
		Attempt:  req.Attempt,
		Try:      req.Try,
		Time:     now.UTC(),
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
		f.Close()
		return err
	}
	return f.Close()
}
