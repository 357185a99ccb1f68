package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/droverhq/drover/internal/redact"
)

// maxOpenAIResponse bounds a successful response body.
const maxOpenAIResponse = 8 << 20

// maxMetaBytes bounds each string the runner keeps from a response in
// Result.Metadata (model, id): the server is not trusted to keep them
// short.
const maxMetaBytes = 256

// errFormatRefused marks a 400 answer that names response_format: the
// server does not support JSON mode.
var errFormatRefused = errors.New("server refused response_format")

// jsonObjectFormat is the response_format of JSON mode.
var jsonObjectFormat = &responseFormat{Type: "json_object"}

type responseFormat struct {
	Type string `json:"type"`
}

// chatMessage, chatRequest and chatResponse are the parts of the chat
// completions wire format the runner uses.
type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	Temperature *float64      `json:"temperature,omitempty"`
	MaxTokens   int           `json:"max_tokens,omitempty"`
	// ResponseFormat asks for a JSON object answer (JSON mode).
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
}

type chatResponse struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
			Refusal string  `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *OpenAIUsage `json:"usage"`
}

// OpenAIUsage is the token usage an openai runner records in
// Result.Metadata["usage"].
type OpenAIUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// failure is why one HTTP attempt failed and whether a retry may fix it.
type failure struct {
	err        error
	retryable  bool
	retryAfter time.Duration // the server's Retry-After, when hasAfter
	hasAfter   bool
}

// Run implements Runner. It renders the role's prompt, POSTs it to
// {base}/chat/completions, retrying 408, 429, 5xx and transport errors
// with backoff (Retry-After honoured, capped at RetryMax; waits end when
// ctx does), and validates the reply with ParseOutput. Other 4xx statuses
// and prompt errors wrap ErrPermanent; a malformed or empty reply, an
// unparseable output and running out of retries do not, so the pipeline
// retries the task. In JSON mode auto, a 400 that names response_format
// is retried once without it, and the runner stops sending it. A key is
// never sent over plain http to a non-loopback host unless
// AllowInsecureHTTP (ErrInsecureHTTP, permanent). Metadata records
// "model", "id" (each cut to 256 bytes), "usage" and "retries".
func (o *OpenAI) Run(ctx context.Context, req Request) (Result, error) {
	if req.Role != o.role {
		return Result{}, Permanent(o.errorf("runner for %s got a %q request", o.role, req.Role))
	}
	key, keySet := o.apiKey()
	if key != "" && o.insecure {
		return Result{}, Permanent(o.errorf("%w", ErrInsecureHTTP))
	}
	format := o.cfg.JSONMode == JSONModeOn || (o.cfg.JSONMode == JSONModeAuto && !o.noFormat.Load())
	body, err := o.requestBody(req, format)
	if err != nil {
		return Result{}, err
	}
	raw, retries, err := o.post(ctx, body, key, keySet, req.TraceParent)
	if err != nil && format && o.cfg.JSONMode == JSONModeAuto && errors.Is(err, errFormatRefused) {
		o.noFormat.Store(true) // remembered: this server does not take it
		if body, err = o.requestBody(req, false); err != nil {
			return Result{}, err
		}
		var more int
		raw, more, err = o.post(ctx, body, key, keySet, req.TraceParent)
		retries += more + 1
	}
	if err != nil {
		return Result{}, err
	}
	return o.result(ctx, raw, retries, key)
}

// apiKey reads the key from the configured environment variable, trimming
// the white space a key file's trailing newline leaves.
func (o *OpenAI) apiKey() (key string, set bool) {
	v, ok := o.opts.lookupEnv(o.cfg.APIKeyEnv)
	return strings.TrimSpace(v), ok
}

// requestBody renders the prompt and encodes the chat completions request,
// in JSON mode when format is set.
func (o *OpenAI) requestBody(req Request, format bool) ([]byte, error) {
	text, err := o.prompts.Render(o.role, promptData(req))
	if err != nil {
		return nil, Permanent(o.errorf("render prompt: %v", err))
	}
	msgs := make([]chatMessage, 0, 2)
	if o.cfg.System != "" {
		msgs = append(msgs, chatMessage{Role: "system", Content: o.cfg.System})
	}
	msgs = append(msgs, chatMessage{Role: "user", Content: text})
	cr := chatRequest{Model: o.cfg.Model, Messages: msgs, Temperature: o.cfg.Temperature, MaxTokens: o.cfg.MaxTokens}
	if format {
		cr.ResponseFormat = jsonObjectFormat
	}
	b, err := json.Marshal(cr)
	if err != nil {
		return nil, Permanent(o.errorf("encode request: %v", err))
	}
	return b, nil
}

// post sends body until it succeeds, fails for good, runs out of retries
// or ctx ends. It returns the response body and how many retries it took.
// A traceparent, when set, goes with every request.
func (o *OpenAI) post(ctx context.Context, body []byte, key string, keySet bool, traceparent string) ([]byte, int, error) {
	for retry := 0; ; retry++ {
		raw, f := o.attempt(ctx, body, key, keySet, traceparent)
		switch {
		case f == nil:
			return raw, retry, nil
		case !f.retryable:
			return nil, retry, o.errorf("%w", f.err)
		case retry >= o.cfg.MaxRetries:
			return nil, retry, o.errorf("gave up after %d attempts: %v", retry+1, f.err)
		}
		d := o.backoff(retry + 1)
		if f.hasAfter {
			d = min(f.retryAfter, o.cfg.RetryMax)
		}
		if err := o.opts.sleep(ctx, d); err != nil {
			return nil, retry, o.errorf("stopped waiting to retry after %d attempts (last: %v): %w", retry+1, f.err, err)
		}
	}
}

// attempt makes one HTTP request, bounded by RequestTimeout.
func (o *OpenAI) attempt(ctx context.Context, body []byte, key string, keySet bool, traceparent string) ([]byte, *failure) {
	actx, cancel := context.WithTimeout(ctx, o.cfg.RequestTimeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, o.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, &failure{err: Permanentf("build request: %v", err)}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if key != "" {
		hreq.Header.Set("Authorization", "Bearer "+key)
	}
	if traceparent != "" {
		hreq.Header.Set("traceparent", traceparent) // HTTP header names are case-insensitive
	}
	resp, err := o.opts.client.Do(hreq)
	if err != nil {
		return nil, o.transportFailure(ctx, err)
	}
	defer func() { _ = resp.Body.Close() }() // read, or abandoned: nothing to lose
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		raw, err := io.ReadAll(io.LimitReader(resp.Body, maxOpenAIResponse+1))
		if err != nil {
			return nil, o.transportFailure(ctx, fmt.Errorf("read response: %w", err))
		}
		if len(raw) > maxOpenAIResponse {
			return nil, &failure{err: fmt.Errorf("response body over %d bytes", maxOpenAIResponse)}
		}
		return raw, nil
	}
	errBody, _ := io.ReadAll(io.LimitReader(resp.Body, excerptRead)) // a partial body still helps
	f := o.statusFailure(resp, excerpt(bytes.NewReader(errBody), key), keySet, key != "")
	if resp.StatusCode == http.StatusBadRequest && bytes.Contains(errBody, []byte("response_format")) {
		f.err = fmt.Errorf("%w: %w", errFormatRefused, f.err)
	}
	return nil, f
}

// transportFailure classifies an error from sending a request or reading
// its response: the caller's ctx ending stops at once; anything else,
// a per-request timeout included, may be retried.
func (o *OpenAI) transportFailure(ctx context.Context, err error) *failure {
	if ctx.Err() != nil {
		return &failure{err: fmt.Errorf("request abandoned: %w", ctx.Err())}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &failure{err: fmt.Errorf("request timed out after %s", o.cfg.RequestTimeout), retryable: true}
	}
	return &failure{err: err, retryable: true}
}

// result decodes a successful response and validates its content.
func (o *OpenAI) result(ctx context.Context, raw []byte, retries int, key string) (Result, error) {
	var resp chatResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return Result{}, o.errorf("malformed response: %v: %s", err, excerpt(bytes.NewReader(raw), key))
	}
	if len(resp.Choices) == 0 {
		return Result{}, o.errorf("response has no choices: %s", excerpt(bytes.NewReader(raw), key))
	}
	choice := resp.Choices[0]
	if choice.Message.Content == nil || strings.TrimSpace(*choice.Message.Content) == "" {
		if choice.Message.Refusal != "" {
			return Result{}, o.errorf("model refused: %s", excerpt(strings.NewReader(choice.Message.Refusal), key))
		}
		return Result{}, o.errorf("response has empty content (finish_reason %q)", choice.FinishReason)
	}
	res, err := ParseOutput(ctx, o.role, []byte(*choice.Message.Content))
	if err != nil {
		if choice.FinishReason == "length" {
			return Result{}, o.errorf("output cut off at max_tokens %d: %w", o.cfg.MaxTokens, err)
		}
		return Result{}, o.errorf("%w", err)
	}
	if res.Metadata == nil {
		res.Metadata = make(map[string]any, 3)
	}
	res.Metadata["model"] = o.cfg.Model
	if resp.Model != "" {
		res.Metadata["model"] = clipMeta(resp.Model)
	}
	if resp.ID != "" {
		res.Metadata["id"] = clipMeta(resp.ID)
	}
	if resp.Usage != nil {
		res.Metadata["usage"] = *resp.Usage
	}
	res.Metadata["retries"] = retries
	return res, nil
}

// clipMeta cuts a string from the server to maxMetaBytes at a rune
// boundary, as valid UTF-8, marking the cut.
func clipMeta(s string) string {
	return redact.Clip(strings.ToValidUTF8(s, "\uFFFD"), maxMetaBytes, "…[truncated]")
}
