package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/droverhq/drover/subjects"
)

// maxObjectScans bounds how many '{' ParseOutput tries as the start of an
// embedded JSON object, so pathological output cannot make it quadratic.
const maxObjectScans = 256

// maxReasoningBytes bounds Result.Reasoning: it is written into audit
// events and task state inline, never offloaded to a blob. The full text
// stays in Output.
const maxReasoningBytes = 16 << 10

// ParseOutput turns a runner's raw output into a validated Result. What
// each role must return:
//
//   - planner: a JSON object with a non-empty "plan" string ("steps", an
//     array of strings, optional), or plain text taken as the plan.
//     Action "plan".
//   - implementer: a JSON object (kept as is; {"change","files","notes"}
//     by convention), or plain text taken as {"change": text}. Action
//     "change".
//   - judge: a JSON object with "verdict" "approve" or "reject" (any case)
//     and optional "feedback" (a string) or "reasons" (a string or an array
//     of strings). Action is the verdict, Reasoning the feedback. Anything
//     else is an error, never a silent approval.
//
// Since models wrap JSON in markdown fences or prose, an object inside a
// ```json fence or embedded in text is found too: the first one that parses
// and has the role's key ("plan", "change" or "verdict"). Empty output is
// an error. Errors are not ErrPermanent: the role is retried.
func ParseOutput(role subjects.Role, out []byte) (Result, error) {
	text := bytes.TrimSpace(out)
	if len(text) == 0 {
		return Result{}, fmt.Errorf("%s: output is empty", role)
	}
	switch role {
	case subjects.RolePlanner:
		return parsePlan(text)
	case subjects.RoleImplementer:
		return parseChange(text)
	case subjects.RoleJudge:
		return parseVerdict(text)
	}
	return Result{}, fmt.Errorf("%w: unknown role %q", ErrPermanent, role)
}

func parsePlan(text []byte) (Result, error) {
	obj, raw, err := findObject(text, "plan")
	if err != nil {
		return Result{}, fmt.Errorf("planner: %w", err)
	}
	if obj == nil {
		return textResult("plan", ActionPlan, text), nil
	}
	var plan struct {
		Plan  *string  `json:"plan"`
		Steps []string `json:"steps"`
	}
	if err := json.Unmarshal(raw, &plan); err != nil {
		return Result{}, fmt.Errorf("planner: output %.80q: %w", text, err)
	}
	if plan.Plan == nil || strings.TrimSpace(*plan.Plan) == "" {
		return Result{}, fmt.Errorf("planner: output has no non-empty \"plan\": %.80q", text)
	}
	return Result{Output: compact(raw), Action: ActionPlan, Reasoning: clip(*plan.Plan)}, nil
}

func parseChange(text []byte) (Result, error) {
	obj, raw, err := findObject(text, "change")
	if err != nil {
		return Result{}, fmt.Errorf("implementer: %w", err)
	}
	if obj == nil {
		return textResult("change", ActionChange, text), nil
	}
	var reasoning string
	_ = json.Unmarshal(obj["change"], &reasoning) // a non-string change is kept, unexplained
	return Result{Output: compact(raw), Action: ActionChange, Reasoning: clip(reasoning)}, nil
}

func parseVerdict(text []byte) (Result, error) {
	obj, _, err := findObject(text, "verdict")
	if err == nil && obj != nil {
		var res Result
		if res, err = verdictResult(obj); err == nil {
			return res, nil
		}
	}
	return Result{}, fmt.Errorf("judge: output has no verdict of approve or reject: %.80q", text)
}

// verdictResult validates and normalises a judge's object: the verdict in
// lower case and the reasons in "feedback".
func verdictResult(obj map[string]json.RawMessage) (Result, error) {
	var verdict string
	if err := json.Unmarshal(obj["verdict"], &verdict); err != nil {
		return Result{}, err
	}
	verdict = strings.ToLower(strings.TrimSpace(verdict))
	if verdict != subjects.VerdictApprove && verdict != subjects.VerdictReject {
		return Result{}, errors.New("unknown verdict")
	}
	feedback := reasons(obj["feedback"])
	if feedback == "" {
		feedback = reasons(obj["reasons"])
	}
	obj["verdict"] = mustMarshal(verdict)
	obj["feedback"] = mustMarshal(feedback)
	return Result{Output: mustMarshal(obj), Action: verdict, Reasoning: clip(feedback)}, nil
}

// reasons reads a string, or an array of strings joined one per line.
func reasons(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return strings.TrimSpace(strings.Join(list, "\n"))
	}
	return ""
}

// findObject returns the JSON object text holds and its raw bytes. When the
// whole of text is JSON it must be an object (else an error). Otherwise the
// first object in a ```json fence or embedded in prose that has key is
// returned. A nil object with a nil error means text is plain text.
func findObject(text []byte, key string) (map[string]json.RawMessage, []byte, error) {
	if json.Valid(text) {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(text, &obj); err != nil || obj == nil {
			return nil, nil, fmt.Errorf("output is JSON but not an object: %.80q", text)
		}
		return obj, text, nil
	}
	scans := 0
	for i := 0; i < len(text) && scans < maxObjectScans; i++ {
		if text[i] != '{' {
			continue
		}
		scans++
		dec := json.NewDecoder(bytes.NewReader(text[i:]))
		var obj map[string]json.RawMessage
		if dec.Decode(&obj) != nil {
			continue
		}
		raw := text[i : i+int(dec.InputOffset())]
		if _, ok := obj[key]; ok {
			return obj, raw, nil
		}
		i += len(raw) - 1 // skip the object: a match is never nested
	}
	return nil, nil, nil
}

// textResult wraps plain text as {key: text}.
func textResult(key, action string, text []byte) Result {
	s := string(text)
	return Result{Output: mustMarshal(map[string]string{key: s}), Action: action, Reasoning: clip(s)}
}

// clip cuts s to maxReasoningBytes at a rune boundary, marking the cut.
func clip(s string) string {
	if len(s) <= maxReasoningBytes {
		return s
	}
	return cutRunes(s, maxReasoningBytes) + " [truncated]"
}

// cutRunes is the longest prefix of s of at most n bytes that ends at a
// rune boundary.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func compact(raw []byte) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return json.RawMessage(raw)
	}
	return b.Bytes()
}

// mustMarshal encodes values that always encode (strings, maps of raw JSON
// already validated).
func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("runner: encode %T: %v", v, err))
	}
	return b
}
