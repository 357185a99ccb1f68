//go:build race

package lessons_test

// raceEnabled reports whether the tests run under the race detector, which
// slows every call several times: timing assertions are skipped then.
const raceEnabled = true
