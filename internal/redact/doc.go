// Package redact keeps secrets and terminal control sequences out of what
// Drover records and prints.
//
// A Redactor is built from the configured secrets (API keys, secret
// environment variables of exec runners, NATS passwords and tokens,
// credentials in URLs) and replaces every occurrence of each, in the forms
// an agent is likely to print (as is, JSON-escaped, percent-encoded, hex,
// base64 on its own or inside a longer stream), with Mask. ScanPatch finds
// them in what a git patch adds, and names the secret and the file. The runner middleware that
// applies it to every role result and error lives in internal/runner
// (runner.WithRedact); Handler applies it to log records.
//
// URL removes credentials from a URL, with or without a scheme, and
// Terminal makes untrusted text safe to print on a terminal.
package redact
