package subjects

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Defaults of a task request's optional fields and of decoding.
const (
	DefaultTaskType     = "task"
	DefaultMaxAttempts  = 3
	MaxMaxAttempts      = 10
	DefaultMaxBodyBytes = 512 << 10
	DefaultMaxDepth     = 32
	MaxTypeBytes        = 64
)

// TaskRequest is the JSON body a producer publishes to drover.tasks.<queue>.
type TaskRequest struct {
	ID           string `json:"id"`
	Workflow     string `json:"workflow"`
	Scope        string `json:"scope"`
	Verification string `json:"verification,omitempty"`
	Type         string `json:"type,omitempty"`
	MaxAttempts  int    `json:"max_attempts,omitempty"`
	// Branch names the git branch of the task's workspace (optional; a
	// board's Branch column fills it). It must be a valid branch name
	// (ValidBranch); empty means the worker's branch template. Without
	// workspaces it is carried and ignored.
	Branch string `json:"branch,omitempty"`
	// Review is the task's review gate: ReviewOff, ReviewAfterJudge or
	// ReviewInstead (optional; a board's Review column fills it); empty
	// means the worker's default for the queue.
	Review   string                     `json:"review,omitempty"`
	Metadata map[string]json.RawMessage `json:"metadata,omitempty"`
}

// Validate checks the fields a producer sets, with the same rules DecodeTask
// applies, so a Go producer learns of a bad request before publishing it.
func (r *TaskRequest) Validate() error {
	if err := ValidateID(r.Workflow); err != nil {
		return fmt.Errorf("workflow: %w", err)
	}
	if err := ValidateID(r.ID); err != nil {
		return fmt.Errorf("id: %w", err)
	}
	if strings.TrimSpace(r.Scope) == "" {
		return errors.New("scope: empty")
	}
	if r.Type != "" {
		if err := ValidateID(r.Type); err != nil || len(r.Type) > MaxTypeBytes {
			return fmt.Errorf("type: %.40q must be 1 to %d bytes with no white space", r.Type, MaxTypeBytes)
		}
	}
	if r.MaxAttempts != 0 && (r.MaxAttempts < 1 || r.MaxAttempts > MaxMaxAttempts) {
		return fmt.Errorf("max_attempts: %d is outside 1 to %d", r.MaxAttempts, MaxMaxAttempts)
	}
	if r.Branch != "" {
		if err := ValidBranch(r.Branch); err != nil {
			return fmt.Errorf("branch: %w", err)
		}
	}
	if r.Review != "" && !ValidReviewMode(r.Review) {
		return fmt.Errorf("review: %.40q is not %s, %s or %s", r.Review, ReviewOff, ReviewAfterJudge, ReviewInstead)
	}
	return nil
}

// WithDefaults returns r with type and max_attempts filled in.
func (r TaskRequest) WithDefaults() TaskRequest {
	if r.Type == "" {
		r.Type = DefaultTaskType
	}
	if r.MaxAttempts == 0 {
		r.MaxAttempts = DefaultMaxAttempts
	}
	return r
}

// Limits bound what DecodeTask accepts. Zero fields take the defaults.
type Limits struct {
	// MaxBytes is the largest body accepted (default 512 KiB).
	MaxBytes int
	// MaxDepth is the deepest nesting of objects and arrays (default 32).
	MaxDepth int
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBodyBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	return l
}

// RejectError says why a request is rejected. Workflow and Task hold the IDs
// when they could be read and are valid, and are empty otherwise.
type RejectError struct {
	Reason   Reason
	Msg      string
	Workflow string
	Task     string
}

func (e *RejectError) Error() string { return string(e.Reason) + ": " + e.Msg }

// maxRejectMsg bounds RejectError.Msg, which goes into the Drover-Error header.
const maxRejectMsg = 256

func reject(reason Reason, format string, args ...any) *RejectError {
	return &RejectError{Reason: reason, Msg: HeaderSafe(fmt.Sprintf(format, args...), maxRejectMsg)}
}

// HeaderSafe makes msg one line of valid UTF-8 of at most limit bytes
// (cut at a character, marked "..."), fit for a NATS header value: an
// error may quote a request body.
func HeaderSafe(msg string, limit int) string {
	msg = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(msg, "\uFFFD"))
	if len(msg) <= limit {
		return msg
	}
	cut := limit - len("...")
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "..."
}

// DecodeTask decodes and validates a task request body. It rejects bodies
// over the size limit, invalid UTF-8, invalid JSON, duplicated keys at any
// level, nesting deeper than the limit, missing required fields and invalid
// values. Keys are case-sensitive; unknown top-level fields are kept in
// metadata.unknown_fields. Defaults are applied to the result.
func DecodeTask(body []byte, lim Limits) (TaskRequest, *RejectError) {
	lim = lim.withDefaults()
	if len(body) > lim.MaxBytes {
		return TaskRequest{}, reject(ReasonTooLarge, "body is %d bytes, the limit is %d", len(body), lim.MaxBytes)
	}
	if !utf8.Valid(body) {
		return TaskRequest{}, reject(ReasonInvalidJSON, "body is not valid UTF-8")
	}
	if err := checkStrict(body, lim.MaxDepth); err != nil {
		return TaskRequest{}, err
	}
	return decodeFields(body)
}

// taskFields says which of a request's optional-but-named keys a body has:
// a key present with an empty value gets its own rejection.
type taskFields struct {
	workflow, id, scope, branch, review bool
}

// decodeFields decodes a body that is one JSON object by the rules
// checkStrict enforces, with encoding/json, and names the first fault.
func decodeFields(body []byte) (TaskRequest, *RejectError) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return TaskRequest{}, reject(ReasonInvalidJSON, "body is not a JSON object: %v", err)
	}
	if top == nil {
		return TaskRequest{}, reject(ReasonInvalidJSON, "body is not a JSON object")
	}
	var (
		req     TaskRequest
		present taskFields
	)
	_, present.workflow = top["workflow"]
	_, present.id = top["id"]
	_, present.scope = top["scope"]
	_, present.branch = top["branch"]
	_, present.review = top["review"]
	rej := func(e *RejectError) (TaskRequest, *RejectError) { return rejectTask(req, e) }
	// IDs first, so that any later rejection can name them; both are read
	// before a bad one is rejected, so the rejection names the other.
	var firstErr *RejectError
	for _, f := range []struct {
		key string
		dst *string
	}{{"workflow", &req.Workflow}, {"id", &req.ID}, {"scope", &req.Scope}, {"verification", &req.Verification}, {"type", &req.Type}, {"branch", &req.Branch}, {"review", &req.Review}} {
		raw, ok := top[f.key]
		if !ok {
			continue
		}
		delete(top, f.key)
		if err := json.Unmarshal(raw, f.dst); err != nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			*f.dst = ""
			if firstErr == nil {
				firstErr = reject(ReasonInvalidValue, "%s must be a string", f.key)
			}
		}
	}
	if firstErr != nil {
		return rej(firstErr)
	}
	if raw, ok := top["max_attempts"]; ok {
		delete(top, "max_attempts")
		n, err := strconv.Atoi(string(bytes.TrimSpace(raw)))
		if err != nil || n < 1 || n > MaxMaxAttempts {
			return rej(reject(ReasonInvalidValue, "max_attempts must be a whole number from 1 to %d, got %.40q", MaxMaxAttempts, raw))
		}
		req.MaxAttempts = n
	}
	if raw, ok := top["metadata"]; ok {
		delete(top, "metadata")
		if err := json.Unmarshal(raw, &req.Metadata); err != nil || req.Metadata == nil {
			return rej(reject(ReasonInvalidValue, "metadata must be a JSON object"))
		}
		if _, err := SimControlsOf(req.Metadata); err != nil {
			return rej(reject(ReasonInvalidValue, "%v", err))
		}
	}
	if len(top) > 0 {
		if _, taken := req.Metadata["unknown_fields"]; taken {
			return rej(reject(ReasonInvalidValue, "metadata.unknown_fields is reserved for unknown top-level fields, and the body has both"))
		}
		unknown, _ := json.Marshal(top) // a map of raw messages always encodes
		if req.Metadata == nil {
			req.Metadata = map[string]json.RawMessage{}
		}
		req.Metadata["unknown_fields"] = unknown
	}
	return finishTask(req, present)
}

// rejectTask is e, naming the request's workflow and task when they are
// valid IDs.
func rejectTask(req TaskRequest, e *RejectError) (TaskRequest, *RejectError) {
	if ValidateID(req.Workflow) == nil {
		e.Workflow = req.Workflow
	}
	if ValidateID(req.ID) == nil {
		e.Task = req.ID
	}
	return TaskRequest{}, e
}

// finishTask checks a request read from a body whose keys were present
// and gives it its defaults.
func finishTask(req TaskRequest, present taskFields) (TaskRequest, *RejectError) {
	rej := func(e *RejectError) (TaskRequest, *RejectError) { return rejectTask(req, e) }
	switch {
	case req.Workflow == "":
		if present.workflow {
			return rej(reject(ReasonInvalidValue, "workflow is empty"))
		}
		return rej(reject(ReasonMissingField, "workflow is required"))
	case req.ID == "":
		if present.id {
			return rej(reject(ReasonInvalidValue, "id is empty"))
		}
		return rej(reject(ReasonMissingField, "id is required"))
	case strings.TrimSpace(req.Scope) == "":
		if present.scope {
			return rej(reject(ReasonInvalidValue, "scope is blank"))
		}
		return rej(reject(ReasonMissingField, "scope is required"))
	case present.branch && req.Branch == "":
		return rej(reject(ReasonInvalidValue, "branch is empty (leave it out for the worker's branch template)"))
	case present.review && req.Review == "":
		return rej(reject(ReasonInvalidValue, "review is empty (leave it out for the queue's default)"))
	}
	if err := req.Validate(); err != nil {
		return rej(reject(ReasonInvalidValue, "%v", err))
	}
	return req.WithDefaults(), nil
}

// checkStrict walks the body's tokens once and rejects trailing data,
// duplicated keys and nesting deeper than maxDepth, which encoding/json
// would otherwise accept silently.
func checkStrict(body []byte, maxDepth int) *RejectError {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	w := walker{dec: dec, maxDepth: maxDepth}
	if err := w.value(0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return reject(ReasonInvalidJSON, "data after the JSON object")
	}
	return nil
}

// walker is checkStrict's state. It keeps the path to the current value as
// a stack and renders it only for an error message: building it eagerly for
// every value costs time quadratic in the body size (a long key above a long
// array).
type walker struct {
	dec      *json.Decoder
	maxDepth int
	path     []pathElem
}

// pathElem is an object key, or an array index.
type pathElem struct {
	key     string
	index   int
	isIndex bool
}

func (w *walker) value(depth int) *RejectError {
	tok, err := w.dec.Token()
	if err != nil {
		return reject(ReasonInvalidJSON, "%v", err)
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if depth+1 > w.maxDepth {
		return reject(ReasonInvalidJSON, "nesting deeper than %d levels", w.maxDepth)
	}
	switch delim {
	case '{':
		seen := map[string]struct{}{}
		for w.dec.More() {
			kt, err := w.dec.Token()
			if err != nil {
				return reject(ReasonInvalidJSON, "%v", err)
			}
			key, _ := kt.(string)
			if _, dup := seen[key]; dup {
				return reject(ReasonInvalidJSON, "duplicate key %.40q%s", key, w.at())
			}
			seen[key] = struct{}{}
			w.path = append(w.path, pathElem{key: key})
			if err := w.value(depth + 1); err != nil {
				return err
			}
			w.path = w.path[:len(w.path)-1]
		}
	case '[':
		for i := 0; w.dec.More(); i++ {
			w.path = append(w.path, pathElem{index: i, isIndex: true})
			if err := w.value(depth + 1); err != nil {
				return err
			}
			w.path = w.path[:len(w.path)-1]
		}
	}
	if _, err := w.dec.Token(); err != nil { // the closing delimiter
		return reject(ReasonInvalidJSON, "%v", err)
	}
	return nil
}

// at renders where the walker is, for an error message: at most about 80
// bytes, keys quoted unless they are plain words, so the message stays one
// line of valid UTF-8 fit for a header.
func (w *walker) at() string {
	if len(w.path) == 0 {
		return " at the top level"
	}
	const limit = 80
	var b strings.Builder
	for i, e := range w.path {
		var s string
		switch {
		case e.isIndex:
			s = "[" + strconv.Itoa(e.index) + "]"
		case plainKey(e.key) && i == 0:
			s = e.key
		case plainKey(e.key):
			s = "." + e.key
		default:
			s = "[" + strconv.Quote(e.key) + "]"
		}
		if b.Len()+len(s) > limit {
			b.WriteString("...")
			break
		}
		b.WriteString(s)
	}
	return " in " + b.String()
}

// plainKey reports whether a key can be shown unquoted in a path.
func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !plainByte(k[i]) {
			return false
		}
	}
	return true
}

// Metadata keys of a task request that set its budgets (a number of USD).
// They limit what a task may spend, never what it produces, so they are
// no part of a role's cache key.
const (
	// MetaTaskBudget limits this task's spend.
	MetaTaskBudget = "budget_usd"
	// MetaWorkflowBudget limits the spend of the task's workflow; the
	// lowest any of its running tasks carries applies.
	MetaWorkflowBudget = "workflow_budget_usd"
)

// MetaBoardLine is the metadata key of a board task's row line number in
// its board file (an integer). It is for display only: it changes when a
// row is inserted above the task, which changes nothing the roles do, so it
// is no part of a role's cache key either.
const MetaBoardLine = "board_line"
