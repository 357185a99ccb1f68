package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/subjects"
)

// maxReasoningBytes bounds Result.Reasoning: it is written into audit
// events and task state inline, never offloaded to a blob. The full text
// stays in Output.
const maxReasoningBytes = 16 << 10

// ParseOutput turns a runner's raw output into a validated Result. What
// each role must return:
//
//   - planner: a JSON object with a non-empty "plan": a string, or a list
//     of steps (strings, or objects with a "text", "step" or "description"
//     string) joined as a numbered list ("steps", an array of strings,
//     optional; a list plan fills it when absent), or plain text taken as
//     the plan. Action "plan".
//   - implementer: a JSON object (kept as is; {"change","files","notes"}
//     by convention), or plain text taken as {"change": text}. Action
//     "change".
//   - judge: a JSON object with "verdict" "approve" or "reject" (any case)
//     and optional "feedback" (a string) or "reasons" (a string or an array
//     of strings). Action is the verdict, Reasoning the feedback. Anything
//     else is an error, never a silent approval.
//
// Since models wrap JSON in markdown fences or prose, an object inside a
// ```json fence or embedded in text is found too: the last top-level
// object (one not nested in another) that parses and has the role's key
// ("plan", "change" or "verdict"). An object quoted earlier in the text,
// or inside a string of the answer (a rejection's feedback quoting
// {"verdict":"approve"}), never wins over the final answer. The scan is
// one linear pass over the output (see scanObjects) and stops with ctx's
// error when ctx ends. Empty output is an error. Errors are not
// ErrPermanent: the role is retried.
func ParseOutput(ctx context.Context, role subjects.Role, out []byte) (Result, error) {
	text := bytes.TrimSpace(out)
	if len(text) == 0 {
		return Result{}, fmt.Errorf("%s: output is empty", role)
	}
	switch role {
	case subjects.RolePlanner:
		return parsePlan(ctx, text)
	case subjects.RoleImplementer:
		return parseChange(ctx, text)
	case subjects.RoleJudge:
		return parseVerdict(ctx, text)
	}
	return Result{}, Permanentf("unknown role %q", role)
}

func parsePlan(ctx context.Context, text []byte) (Result, error) {
	obj, raw, err := findObject(ctx, text, "plan")
	if err != nil {
		return Result{}, fmt.Errorf("planner: %w", err)
	}
	if obj == nil {
		return textResult("plan", ActionPlan, text), nil
	}
	var steps []string
	if s, ok := obj["steps"]; ok {
		if err := json.Unmarshal(s, &steps); err != nil {
			return Result{}, fmt.Errorf("planner: output %.80q: \"steps\": %w", text, err)
		}
	}
	plan, list, err := planText(obj["plan"])
	if err != nil {
		return Result{}, fmt.Errorf("planner: output %.80q: %w", text, err)
	}
	if strings.TrimSpace(plan) == "" {
		return Result{}, fmt.Errorf("planner: output has no non-empty \"plan\": %.80q", text)
	}
	if list == nil {
		return Result{Output: compact(raw), Action: ActionPlan, Reasoning: clip(plan)}, nil
	}
	obj["plan"] = mustMarshal(plan)
	if _, ok := obj["steps"]; !ok {
		obj["steps"] = mustMarshal(list)
	}
	return Result{Output: mustMarshal(obj), Action: ActionPlan, Reasoning: clip(plan)}, nil
}

// planText reads a plan: a string, or a list of steps joined as a
// numbered list (list is then the steps' texts).
func planText(raw json.RawMessage) (plan string, list []string, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	if json.Unmarshal(raw, &plan) == nil {
		return plan, nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return "", nil, errors.New(`"plan" is neither a string nor a list of steps`)
	}
	list = make([]string, 0, len(items))
	var b strings.Builder
	for i, it := range items {
		s, ok := stepText(it)
		if !ok {
			return "", nil, fmt.Errorf(`"plan"[%d]: a step is a string or an object with a "text", "step" or "description" string`, i)
		}
		list = append(list, s)
		fmt.Fprintf(&b, "%d. %s\n", i+1, s)
	}
	return strings.TrimSuffix(b.String(), "\n"), list, nil
}

// stepText reads one step of a list plan.
func stepText(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		s = strings.TrimSpace(s)
		return s, s != ""
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return "", false
	}
	for _, k := range []string{"text", "step", "description"} {
		if json.Unmarshal(obj[k], &s) == nil && strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s), true
		}
	}
	return "", false
}

func parseChange(ctx context.Context, text []byte) (Result, error) {
	obj, raw, err := findObject(ctx, text, "change")
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

func parseVerdict(ctx context.Context, text []byte) (Result, error) {
	obj, _, err := findObject(ctx, text, "verdict")
	if err != nil && ctx.Err() != nil {
		return Result{}, fmt.Errorf("judge: %w", err)
	}
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
// whole of text is JSON it must be an object (else an error). Otherwise it
// is the last top-level object in text (in a ```json fence or embedded in
// prose) that parses and has key; an object that parses without key is
// skipped whole (a match is never nested), and a candidate that does not
// parse is searched for objects inside it, last first. A nil object with
// a nil error means text is plain text. The work is linear in len(text):
// one scan, then decodes of at most decodeBudget(len(text)) bytes.
func findObject(ctx context.Context, text []byte, key string) (map[string]json.RawMessage, []byte, error) {
	if json.Valid(text) {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(text, &obj); err != nil || obj == nil {
			return nil, nil, fmt.Errorf("output is JSON but not an object: %.80q", text)
		}
		return obj, text, nil
	}
	spans, err := scanObjects(ctx, text)
	if err != nil {
		return nil, nil, err
	}
	budget := decodeBudget(len(text))
	quoted := []byte(`"` + key + `"`)
	stack := spans.roots() // the last on top
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("parse output: %w", err)
		}
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		s := spans[i]
		if budget -= s.end - s.start; budget < 0 {
			break
		}
		raw := text[s.start:s.end]
		if !bytes.Contains(raw, quoted) && !bytes.Contains(raw, []byte(`\u`)) {
			continue // neither it nor anything inside it has key
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			stack = append(stack, spans.children(i)...)
			continue
		}
		if _, ok := obj[key]; ok {
			return obj, raw, nil
		}
	}
	return nil, nil, nil
}

// decodeBudget bounds the bytes findObject decodes for n bytes of output:
// every top-level candidate once, and a few levels of the candidates
// inside those that do not parse.
func decodeBudget(n int) int { return 4*n + 4<<10 }

// textResult wraps plain text as {key: text}.
func textResult(key, action string, text []byte) Result {
	s := string(text)
	return Result{Output: mustMarshal(map[string]string{key: s}), Action: action, Reasoning: clip(s)}
}

// clip cuts s to maxReasoningBytes at a rune boundary, marking the cut.
func clip(s string) string {
	return redact.Clip(s, maxReasoningBytes, " [truncated]")
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
