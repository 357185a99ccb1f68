package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRedactorString(t *testing.T) {
	t.Parallel()
	r := New("sk-live-1234567890", "hunter22", "abc", "  ", "sk-live-1234567890", `p<a>"ss\word`)
	for _, tc := range []struct{ name, in, want string }{
		{"none", "nothing secret here", "nothing secret here"},
		{"raw", "key=sk-live-1234567890.", "key=[REDACTED]."},
		{"twice", "hunter22 hunter22", "[REDACTED] [REDACTED]"},
		{"short secret ignored", "abc abc", "abc abc"},
		{"json escaped", `{"k":"p\u003ca\u003e\"ss\\word"}`, `{"k":"[REDACTED]"}`},
		{"json escaped without html", `{"k":"p<a>\"ss\\word"}`, `{"k":"[REDACTED]"}`},
		{"percent encoded", "u?p=p%3Ca%3E%22ss%5Cword", "u?p=[REDACTED]"},
		{"prefix only kept", "sk-live-12345", "sk-live-12345"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, r.String(tc.in))
		})
	}
}

func TestRedactorLongestFirst(t *testing.T) {
	t.Parallel()
	r := New("secret", "secret-and-more")
	require.Equal(t, "x [REDACTED] y", r.String("x secret-and-more y"))
}

func TestRedactorEmpty(t *testing.T) {
	t.Parallel()
	for _, r := range []*Redactor{nil, {}, New(), New("", "ab")} {
		require.True(t, r.Empty())
		require.Equal(t, "ab x", r.String("ab x"))
		err := errors.New("ab")
		require.Same(t, err, r.Error(err))
		require.Equal(t, []byte(`"ab"`), r.JSON([]byte(`"ab"`)))
	}
}

func TestRedactorError(t *testing.T) {
	t.Parallel()
	r := New("hunter22")
	base := fmt.Errorf("open: %w: password hunter22", fs.ErrNotExist)
	err := r.Error(base)
	require.EqualError(t, err, "open: file does not exist: password [REDACTED]")
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorIs(t, err, base)
	clean := errors.New("clean")
	require.Same(t, clean, r.Error(clean))
	require.NoError(t, r.Error(nil))
}

func TestRedactorJSON(t *testing.T) {
	t.Parallel()
	r := New("hunter22", "u0041bcd")
	for _, tc := range []struct{ name, in, want string }{
		{"untouched", `{"b":1,"a":"x"}`, `{"b":1,"a":"x"}`},
		{"value", `{"a":"pw hunter22","n":12345678901234567890}`, `{"a":"pw [REDACTED]","n":12345678901234567890}`},
		{"key and array", `{"hunter22":["hunter22",1]}`, `{"[REDACTED]":["[REDACTED]",1]}`},
		{"inside an escape stays valid", `{"a":"\u0041bcd u0041bcd"}`, `{"a":"Abcd [REDACTED]"}`},
		{"not JSON", `hunter22 {`, `"[REDACTED] {"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := r.JSON([]byte(tc.in))
			require.True(t, json.Valid(out), "%s", out)
			require.JSONEq(t, tc.want, string(out))
			require.NotContains(t, string(out), "hunter22")
		})
	}
}

func TestURLSecrets(t *testing.T) {
	t.Parallel()
	got := URLSecrets("nats://u:pw1@h:4222, tok3n@h2:4222,https://x/v1?api_key=k123&x=1,user:pass@host:4222")
	require.ElementsMatch(t, []string{"pw1", "dTpwdzE=", "tok3n", "k123", "pass", "dXNlcjpwYXNz"}, got)
	r := New(URLSecrets("https://alice:s3cret!!@proxy:8080")...)
	require.Equal(t, "Authorization: Basic [REDACTED]", r.String("Authorization: Basic YWxpY2U6czNjcmV0ISE="))
}

func TestURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"nats://localhost:4222", "nats://localhost:4222"},
		{"nats://u:pw@h:4222", "nats://[REDACTED]@h:4222"},
		{"u:pw@h:4222", "[REDACTED]@h:4222"},
		{"tok3n@h:4222", "[REDACTED]@h:4222"},
		{"h:4222", "h:4222"},
		{"nats://a:1@h1:4222,nats://b:2@h2:4222", "nats://[REDACTED]@h1:4222,nats://[REDACTED]@h2:4222"},
		{"https://otel:4318/v1/traces?token=abc&x=1", "https://otel:4318/v1/traces?token=[REDACTED]&x=1"},
		{"http://x/v1?API_KEY=abc", "http://x/v1?API_KEY=[REDACTED]"},
		{"%zz:pw@host", "[REDACTED]@host"},
		{"", ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, URL(tc.in))
		})
	}
}

func TestSecretEnvName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "GITHUB_TOKEN": true, "client_secret": true, "DB_PASSWORD": true,
		"AWS_CREDENTIALS": true, "PATH": false, "HOME": false, "LANG": false,
	} {
		require.Equal(t, want, SecretEnvName(name), name)
	}
}

func TestTerminal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "hello, wörld\n\tok", "hello, wörld\n\tok"},
		{"csi colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"osc title", "\x1b]0;pwned\x07x", `\x1b]0;pwned\x07x`},
		{"carriage return", "ok\rFAKE", `ok\x0dFAKE`},
		{"nul and del", "a\x00b\x7f", `a\x00b\x7f`},
		{"c1 csi", "a\u009b31mb", `a\x9b31mb`},
		{"bidi override", "abc\u202eevil", `abc\u202eevil`},
		{"bidi isolate", "\u2066x\u2069", `\u2066x\u2069`},
		{"invalid utf8", "a\xffb", "a\uFFFDb"},
		{"replacement char kept", "a\uFFFDb", "a\uFFFDb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Terminal(tc.in)
			require.Equal(t, tc.want, got)
			require.NotContains(t, got, "\x1b")
		})
	}
}

func TestHandler(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	r := New("hunter22")
	log := slog.New(r.Handler(slog.NewJSONHandler(&buf, nil))).With("pre", "x hunter22")
	log.WithGroup("g").Info("msg hunter22", "err", fmt.Errorf("wrapped: %w", errors.New("hunter22")),
		"s", "hunter22", "b", []byte("hunter22"), slog.Group("in", "v", "hunter22"), "n", 3)
	out := buf.String()
	require.NotContains(t, out, "hunter22")
	require.Equal(t, 6, strings.Count(out, Mask), out)
	require.Contains(t, out, `"n":3`)
}
