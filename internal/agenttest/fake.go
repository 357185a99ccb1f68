package agenttest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// fake is what every model API fake shares: its address, its script, and
// what it received and reported.
type fake struct {
	// URL is the fake's base address, on loopback.
	URL    string
	script []Turn

	mu       sync.Mutex
	requests []Request
	in, out  int64
	// Meter: usage is measured, not scripted (see Meter).
	metered bool
	seen    map[[sha256.Size]byte]bool
	// on are the scripts of On, by the marker that selects them.
	on []branch
}

type branch struct {
	marker string
	script []Turn
}

// On makes a request of the agent's loop whose body holds marker play
// script instead of the fake's own, from the first On that matches: a
// role run twice with different prompts (a judge's attempt 1 and 2)
// gets different answers.
func (f *fake) On(marker string, script ...Turn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.on = append(f.on, branch{marker, script})
}

// turn is the turn n of the script that body selects (see On), or a
// short answer past its end.
func (f *fake) turn(body []byte, n int) Turn {
	f.mu.Lock()
	defer f.mu.Unlock()
	script := f.script
	for _, b := range f.on {
		if bytes.Contains(body, []byte(b.marker)) {
			script = b.script
			break
		}
	}
	if n < len(script) {
		return script[n]
	}
	return Turn{Text: "script exhausted", InputTokens: 1, OutputTokens: 1}
}

// Meter makes the fake report measured usage instead of the script's
// input tokens, as the real APIs with prompt caching do: a request's
// input is its instructions (system prompt), tools and history (messages,
// input items) at 4 bytes a token, and the longest prefix of them (the
// instructions and tools, then whole messages) that an earlier request
// sent is read from the cache, the rest is fresh input. A resumed
// session re-sends its history, which is then mostly cache reads. Output
// tokens stay the script's. Call it before the first request.
func (f *fake) Meter() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.metered, f.seen = true, map[[sha256.Size]byte]bool{}
}

// measure measures a request's input parts, in order: all of them and
// the prefix an earlier request sent, in tokens. Called with f.mu held.
func (f *fake) measure(parts []json.RawMessage) (total, cached int64) {
	h := sha256.New()
	hit := true
	for _, p := range parts {
		h.Write(p)
		n := int64(len(p)+3) / 4
		total += n
		var sum [sha256.Size]byte
		copy(sum[:], h.Sum(nil))
		if hit && f.seen[sum] {
			cached += n
		} else {
			hit = false
		}
		f.seen[sum] = true
	}
	return total, cached
}

// meterBody measures body (see Meter) as the APIs lay it out: the values
// of the head keys (system prompt, tools) as one part, then each item of
// the list under key list (messages, input items, contents). Called with
// f.mu held.
func (f *fake) meterBody(body []byte, list string, head ...string) (total, cached int64) {
	var m map[string]json.RawMessage
	var items []json.RawMessage
	if json.Unmarshal(body, &m) != nil || (m[list] != nil && json.Unmarshal(m[list], &items) != nil) {
		return int64(len(body)+3) / 4, 0
	}
	var first []byte
	for _, k := range head {
		first = append(first, m[k]...)
	}
	return f.measure(append([]json.RawMessage{first}, items...))
}

// record keeps rec with the usage the fake reports for turn (measured
// from body through meter when the fake is metered and meter is set), and
// adds a successful turn's usage to the totals. It returns the turn as
// reported (its fresh input), its cache reads, and how many requests the
// fake has kept.
func (f *fake) record(rec Request, turn Turn, meter func() (total, cached int64)) (Turn, int64, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var cached int64
	if f.metered && meter != nil && turn.Status == 0 {
		total, c := meter()
		turn.InputTokens, cached = total-c, c
	}
	rec.InputTokens, rec.CacheReadTokens, rec.OutputTokens = turn.InputTokens, cached, turn.OutputTokens
	f.requests = append(f.requests, rec)
	if turn.Status == 0 {
		f.in += turn.InputTokens + cached
		f.out += turn.OutputTokens
	}
	return turn, cached, len(f.requests)
}

// start serves h on loopback until t ends.
func (f *fake) start(t testing.TB, h http.HandlerFunc) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	f.URL = srv.URL
}

// Requests returns what the fake has received so far.
func (f *fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.requests...)
}

// Totals is the input (cache reads included) and output tokens the fake
// reported in all.
func (f *fake) Totals() (in, out int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.in, f.out
}
