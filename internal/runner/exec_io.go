package runner

import (
	"bytes"
	"errors"
	"strings"
	"unicode/utf8"
)

// errStdoutLimit stops the copy of stdout once over its bound.
var errStdoutLimit = errors.New("stdout over the limit")

// limitWriter keeps up to max bytes; the first write past max calls over
// once and fails, so the copy stops. It is written by one goroutine and
// read after the command's Wait.
type limitWriter struct {
	buf      bytes.Buffer
	max      int
	over     func()
	exceeded bool
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if w.exceeded {
		return 0, errStdoutLimit
	}
	if w.buf.Len()+len(p) > w.max {
		w.exceeded = true
		w.over()
		return 0, errStdoutLimit
	}
	return w.buf.Write(p)
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	buf []byte
	max int
	cut bool // bytes were dropped from the front
}

func (w *tailWriter) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= w.max {
		w.cut = w.cut || len(w.buf) > 0 || len(p) > w.max
		w.buf = append(w.buf[:0], p[len(p)-w.max:]...)
		return n, nil
	}
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.max; over > 0 {
		w.cut = true
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return n, nil
}

// suffix is ": " and the kept stderr as valid UTF-8 with its ends trimmed,
// or "" when stderr was empty. A cut is marked with a leading "...".
func (w *tailWriter) suffix() string {
	b := w.buf
	if w.cut {
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
	if s == "" {
		return ""
	}
	if w.cut {
		s = "..." + s
	}
	return ": " + s
}
