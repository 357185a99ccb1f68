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
	ID           string                     `json:"id"`
	Workflow     string                     `json:"workflow"`
	Scope        string                     `json:"scope"`
	Verification string                     `json:"verification,omitempty"`
	Type         string                     `json:"type,omitempty"`
	MaxAttempts  int                        `json:"max_attempts,omitempty"`
	Metadata     map[string]json.RawMessage `json:"metadata,omitempty"`
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
			return fmt.Errorf("type: %q must be 1 to %d bytes with no white space", r.Type, MaxTypeBytes)
		}
	}
	if r.MaxAttempts != 0 && (r.MaxAttempts < 1 || r.MaxAttempts > MaxMaxAttempts) {
		return fmt.Errorf("max_attempts: %d is outside 1 to %d", r.MaxAttempts, MaxMaxAttempts)
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

func reject(reason Reason, format string, args ...any) *RejectError {
	return &RejectError{Reason: reason, Msg: fmt.Sprintf(format, args...)}
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
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return TaskRequest{}, reject(ReasonInvalidJSON, "body is not a JSON object: %v", err)
	}
	if top == nil {
		return TaskRequest{}, reject(ReasonInvalidJSON, "body is not a JSON object")
	}
	var req TaskRequest
	_, scopePresent := top["scope"]
	rej := func(e *RejectError) (TaskRequest, *RejectError) {
		if ValidateID(req.Workflow) == nil {
			e.Workflow = req.Workflow
		}
		if ValidateID(req.ID) == nil {
			e.Task = req.ID
		}
		return TaskRequest{}, e
	}
	// IDs first, so that any later rejection can name them.
	for _, f := range []struct {
		key string
		dst *string
	}{{"workflow", &req.Workflow}, {"id", &req.ID}, {"scope", &req.Scope}, {"verification", &req.Verification}, {"type", &req.Type}} {
		raw, ok := top[f.key]
		if !ok {
			continue
		}
		delete(top, f.key)
		if err := json.Unmarshal(raw, f.dst); err != nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			*f.dst = ""
			return rej(reject(ReasonInvalidValue, "%s must be a string", f.key))
		}
	}
	if raw, ok := top["max_attempts"]; ok {
		delete(top, "max_attempts")
		n, err := strconv.Atoi(string(bytes.TrimSpace(raw)))
		if err != nil || n < 1 || n > MaxMaxAttempts {
			return rej(reject(ReasonInvalidValue, "max_attempts must be a whole number from 1 to %d, got %.40s", MaxMaxAttempts, raw))
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
	switch {
	case req.Workflow == "":
		return rej(reject(ReasonMissingField, "workflow is required"))
	case req.ID == "":
		return rej(reject(ReasonMissingField, "id is required"))
	case strings.TrimSpace(req.Scope) == "":
		if scopePresent {
			return rej(reject(ReasonInvalidValue, "scope is blank"))
		}
		return rej(reject(ReasonMissingField, "scope is required"))
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
	if err := walkValue(dec, 0, maxDepth, ""); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return reject(ReasonInvalidJSON, "data after the JSON object")
	}
	return nil
}

func walkValue(dec *json.Decoder, depth, maxDepth int, path string) *RejectError {
	tok, err := dec.Token()
	if err != nil {
		return reject(ReasonInvalidJSON, "%v", err)
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if depth+1 > maxDepth {
		return reject(ReasonInvalidJSON, "nesting deeper than %d levels", maxDepth)
	}
	switch delim {
	case '{':
		seen := map[string]struct{}{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return reject(ReasonInvalidJSON, "%v", err)
			}
			key, _ := kt.(string)
			if _, dup := seen[key]; dup {
				return reject(ReasonInvalidJSON, "duplicate key %q%s", key, at(path))
			}
			seen[key] = struct{}{}
			if err := walkValue(dec, depth+1, maxDepth, path+"."+key); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, depth+1, maxDepth, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return reject(ReasonInvalidJSON, "%v", err)
	}
	return nil
}

func at(path string) string {
	if path == "" {
		return " at the top level"
	}
	if len(path) > 80 {
		path = path[:80] + "..."
	}
	return " in " + strings.TrimPrefix(path, ".")
}
