package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/droverhq/drover/internal/backoff"
	"github.com/droverhq/drover/internal/prompt"
	"github.com/droverhq/drover/subjects"
)

// OpenAIIdentityPrefix starts every openai runner's identity. Bump its
// version whenever the request the runner sends for a given prompt changes.
const OpenAIIdentityPrefix = "openai/v1:"

// Defaults of OpenAIConfig's optional fields.
const (
	DefaultOpenAIKeyEnv         = "OPENAI_API_KEY"
	DefaultOpenAIRequestTimeout = 5 * time.Minute
	DefaultOpenAIMaxRetries     = 5
	DefaultOpenAIRetryBase      = time.Second
	DefaultOpenAIRetryMax       = time.Minute
	// DefaultOpenAIMaxConns is the idle connections kept per host when
	// the worker's concurrency is not known.
	DefaultOpenAIMaxConns = 16
)

// JSON modes of an openai runner (OpenAIConfig.JSONMode).
const (
	// JSONModeAuto sends response_format {"type":"json_object"}; when the
	// server answers 400 naming response_format, the call is retried once
	// without it and the runner never sends it again.
	JSONModeAuto = "auto"
	// JSONModeOn always sends response_format; a server that refuses it
	// fails the call (ErrPermanent).
	JSONModeOn = "on"
	// JSONModeOff never sends response_format.
	JSONModeOff = "off"
)

// OpenAIConfig configures a runner for an OpenAI-compatible chat
// completions API (OpenAI, vLLM, llama.cpp's server, Ollama, LM Studio and
// most gateways).
type OpenAIConfig struct {
	// BaseURL is the API root, e.g. https://api.openai.com/v1 or
	// http://localhost:11434/v1; the runner POSTs to BaseURL +
	// "/chat/completions". Required; a trailing slash is ignored.
	BaseURL string
	// Model is the model name sent with every request. Required.
	Model string
	// APIKeyEnv names the environment variable holding the API key
	// (default OPENAI_API_KEY). It is read on every call. An unset or empty
	// variable sends no Authorization header, which local servers accept.
	APIKeyEnv string
	// Temperature is sent when set (nil: the server's default).
	Temperature *float64
	// MaxTokens is sent as max_tokens when positive (0: omitted).
	MaxTokens int
	// RequestTimeout bounds each HTTP request, body included (default 5m).
	RequestTimeout time.Duration
	// MaxRetries is how many times a call retries 408, 429, 5xx and
	// transport errors before giving up (default 5; negative: never).
	MaxRetries int
	// RetryBase is the first retry's backoff, doubled on each further retry
	// with jitter (default 1s). A Retry-After header replaces it.
	RetryBase time.Duration
	// RetryMax caps every backoff, Retry-After included (default 1m).
	RetryMax time.Duration
	// System, when set, is sent as a system message before the prompt.
	System string
	// JSONMode asks the server for a JSON object answer: auto (default),
	// on or off (see JSONModeAuto).
	JSONMode string
	// AllowInsecureHTTP lets the API key go to a plain http:// BaseURL
	// whose host is not a loopback address. Without it such a base URL is
	// refused when a key is set: the key would cross the network in clear.
	AllowInsecureHTTP bool
	// MaxConns is how many idle connections the runner keeps to the
	// server: the worker's concurrency (default 16).
	MaxConns int
	// RoleTimeout, when positive, bounds how long the runner waits for a
	// response's headers, below RequestTimeout.
	RoleTimeout time.Duration
}

// WithDefaults returns c with its zero optional fields set to their defaults.
func (c OpenAIConfig) WithDefaults() OpenAIConfig {
	c.BaseURL = strings.TrimRight(strings.TrimSpace(c.BaseURL), "/")
	if c.APIKeyEnv == "" {
		c.APIKeyEnv = DefaultOpenAIKeyEnv
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultOpenAIRequestTimeout
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultOpenAIMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	if c.RetryBase == 0 {
		c.RetryBase = DefaultOpenAIRetryBase
	}
	if c.RetryMax == 0 {
		c.RetryMax = DefaultOpenAIRetryMax
	}
	if c.JSONMode == "" {
		c.JSONMode = JSONModeAuto
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultOpenAIMaxConns
	}
	return c
}

// ErrInsecureHTTP is returned when an API key would be sent over plain
// HTTP to a host that is not a loopback address.
var ErrInsecureHTTP = errors.New("refusing to send the API key over plain http to a non-loopback host (set allow_insecure_http: true to allow it)")

// InsecureHTTP reports whether baseURL is a plain http:// URL whose host
// is not a loopback address (localhost, 127.0.0.0/8, ::1): a key sent
// there crosses the network in clear.
func InsecureHTTP(baseURL string) bool {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil || !strings.EqualFold(u.Scheme, "http") {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// validate checks a config that has had its defaults applied.
func (c OpenAIConfig) validate() error {
	u, err := url.Parse(c.BaseURL)
	switch {
	case c.BaseURL == "":
		return errors.New("base_url: required")
	case err != nil:
		return fmt.Errorf("base_url: %w", err)
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("base_url: %q must be an absolute http or https URL", u.Redacted())
	case strings.TrimSpace(c.Model) == "":
		return errors.New("model: required")
	case c.Temperature != nil && (math.IsNaN(*c.Temperature) || math.IsInf(*c.Temperature, 0) || *c.Temperature < 0):
		return fmt.Errorf("temperature: %v must be a finite number, 0 or more", *c.Temperature)
	case c.MaxTokens < 0:
		return fmt.Errorf("max_tokens: %d must be 0 (omitted) or more", c.MaxTokens)
	case c.RequestTimeout < 0:
		return fmt.Errorf("request_timeout: %s must be positive", c.RequestTimeout)
	case c.RetryBase < 0:
		return fmt.Errorf("retry_base: %s must be positive", c.RetryBase)
	case c.RetryMax < c.RetryBase:
		return fmt.Errorf("retry_max: %s must be at least retry_base %s", c.RetryMax, c.RetryBase)
	case strings.ContainsAny(c.APIKeyEnv, "= \t\n"):
		return fmt.Errorf("api_key_env: %q is not an environment variable name", c.APIKeyEnv)
	case c.JSONMode != JSONModeAuto && c.JSONMode != JSONModeOn && c.JSONMode != JSONModeOff:
		return fmt.Errorf("json_mode: %q: want auto, on or off", c.JSONMode)
	}
	return nil
}

// OpenAIOption customises an OpenAI runner.
type OpenAIOption func(*openAIOptions) error

type openAIOptions struct {
	client    *http.Client
	lookupEnv func(string) (string, bool)
	sleep     func(ctx context.Context, d time.Duration) error
}

// WithHTTPClient sets the HTTP client (default: a client with a transport
// of its own, see newOpenAITransport). RequestTimeout still bounds each
// request.
func WithHTTPClient(c *http.Client) OpenAIOption {
	return func(o *openAIOptions) error {
		if c == nil {
			return errors.New("WithHTTPClient: nil client")
		}
		o.client = c
		return nil
	}
}

// WithLookupEnv sets how the API key's environment variable is read
// (default os.LookupEnv).
func WithLookupEnv(f func(string) (string, bool)) OpenAIOption {
	return func(o *openAIOptions) error {
		if f == nil {
			return errors.New("WithLookupEnv: nil function")
		}
		o.lookupEnv = f
		return nil
	}
}

// WithSleep sets how the runner waits between retries (default: a timer
// that ctx cancels). It must return ctx's error when ctx is done first.
// Tests use it to record the delays and skip the waiting.
func WithSleep(f func(ctx context.Context, d time.Duration) error) OpenAIOption {
	return func(o *openAIOptions) error {
		if f == nil {
			return errors.New("WithSleep: nil function")
		}
		o.sleep = f
		return nil
	}
}

// OpenAI runs one role against an OpenAI-compatible chat completions API.
// It is safe for concurrent use. It never stores the API key: the key is
// read from the environment on every call and kept out of its identity,
// errors and metadata.
type OpenAI struct {
	role      subjects.Role
	cfg       OpenAIConfig
	prompts   *prompt.Set
	opts      openAIOptions
	transport *http.Transport // the default client's; nil with WithHTTPClient
	endpoint  string          // BaseURL + "/chat/completions"
	where     string          // "model M at URL" (URL redacted) for error messages
	identity  string
	insecure  bool         // BaseURL is plain http to a non-loopback host
	noFormat  *atomic.Bool // the server refused response_format (JSONModeAuto)
	health    *health      // the cached health check (see Health)
}

// NewOpenAI returns a runner for role. A nil prompts uses prompt.Defaults().
// It reports a bad config naming the field, and refuses a plain http://
// base URL to a non-loopback host when the API key is set, unless
// AllowInsecureHTTP. Close releases its idle connections.
func NewOpenAI(role subjects.Role, cfg OpenAIConfig, prompts *prompt.Set, opts ...OpenAIOption) (*OpenAI, error) {
	if !role.Valid() {
		return nil, fmt.Errorf("openai: unknown role %q", role)
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("%s: openai: %w", role, err)
	}
	if prompts == nil {
		prompts = prompt.Defaults()
	}
	o := &OpenAI{role: role, cfg: cfg, prompts: prompts, endpoint: cfg.BaseURL + "/chat/completions", noFormat: new(atomic.Bool), health: new(health)}
	o.opts = openAIOptions{lookupEnv: os.LookupEnv, sleep: backoff.Sleep}
	for _, opt := range opts {
		if err := opt(&o.opts); err != nil {
			return nil, fmt.Errorf("%s: openai: %w", role, err)
		}
	}
	if o.opts.client == nil {
		o.transport = newOpenAITransport(cfg)
		o.opts.client = &http.Client{Transport: o.transport}
	}
	o.insecure = InsecureHTTP(cfg.BaseURL) && !cfg.AllowInsecureHTTP
	if key, _ := o.apiKey(); key != "" && o.insecure {
		return nil, fmt.Errorf("%s: openai: base_url: %w", role, ErrInsecureHTTP)
	}
	u, _ := url.Parse(cfg.BaseURL) // validated above
	o.where = fmt.Sprintf("model %s at %s", cfg.Model, u.Redacted())
	o.identity = openAIIdentity(cfg, prompts.Hash(role))
	return o, nil
}

// openAIIdentity hashes every setting that changes the output, in a fixed
// field order, and never the key.
func openAIIdentity(cfg OpenAIConfig, promptHash string) string {
	b, err := json.Marshal(struct {
		BaseURL     string   `json:"base_url"`
		Model       string   `json:"model"`
		Temperature *float64 `json:"temperature"`
		MaxTokens   int      `json:"max_tokens"`
		System      string   `json:"system"`
		Prompt      string   `json:"prompt"`
		JSONMode    string   `json:"json_mode"`
	}{cfg.BaseURL, cfg.Model, cfg.Temperature, cfg.MaxTokens, cfg.System, promptHash, cfg.JSONMode})
	// validate rejects NaN and Inf; the rest are plain values
	return OpenAIIdentityPrefix + identityHash("openai", b, err)
}

// Identity implements Runner: "openai/v1:" and a sha256 over the base URL,
// model, temperature, max tokens, system message, JSON mode and the role's
// prompt template hash.
func (o *OpenAI) Identity() string { return o.identity }

// errorf prefixes an error with the role, model and base URL.
func (o *OpenAI) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: openai %s: "+format, append([]any{o.role, o.where}, args...)...)
}

// Close releases the runner's idle connections. The runner still works
// after Close (a new call opens a new connection).
func (o *OpenAI) Close() error {
	if o.transport != nil {
		o.transport.CloseIdleConnections()
	}
	return nil
}

// Timeouts of the openai runner's own transport.
const (
	openAIDialTimeout     = 30 * time.Second
	openAITLSTimeout      = 10 * time.Second
	openAIIdleConnTimeout = 90 * time.Second
)

// newOpenAITransport is a transport of the runner's own, not
// http.DefaultTransport: MaxConns idle connections per host, bounded dial
// and TLS handshake, response headers awaited at most RequestTimeout (or
// RoleTimeout when shorter), idle connections closed after 90s. Proxies
// come from the environment, as with the default transport.
func newOpenAITransport(cfg OpenAIConfig) *http.Transport {
	header := cfg.RequestTimeout
	if cfg.RoleTimeout > 0 && cfg.RoleTimeout < header {
		header = cfg.RoleTimeout
	}
	dialer := &net.Dialer{Timeout: openAIDialTimeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          2 * cfg.MaxConns,
		MaxIdleConnsPerHost:   cfg.MaxConns,
		IdleConnTimeout:       openAIIdleConnTimeout,
		TLSHandshakeTimeout:   openAITLSTimeout,
		ResponseHeaderTimeout: header,
		ExpectContinueTimeout: time.Second,
	}
}
