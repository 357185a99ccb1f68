package redact

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Found is a configured secret found in text: the name it was configured
// under (never its value) and the form it was written in ("plain",
// "base64", "hex", "json", "url").
type Found struct {
	Name, Form string
}

// Find reports the first secret s holds, in any of its forms.
func (r *Redactor) Find(s string) (Found, bool) {
	if r.Empty() {
		return Found{}, false
	}
	i := r.match.first(s, r.forms)
	if i < 0 {
		return Found{}, false
	}
	f := r.forms[i]
	return Found{Name: r.names[f.secret], Form: f.kind}, true
}

// Scan is Find for the secrets ScanPatch looks for (MinScanLen bytes and
// more), in text that is not a patch (a commit log).
func (r *Redactor) Scan(s string) (Found, bool) {
	if r.Empty() || r.scan.Empty() {
		return Found{}, false
	}
	return r.scan.Find(s)
}

// PatchFinding is a configured secret in a patch: which one, and the file
// whose new content (or name) holds it. File is as the patch names it,
// with every secret masked.
type PatchFinding struct {
	Found
	File string
}

// MinScanLen is the shortest secret ScanPatch looks for: a shorter one (a
// development password such as "drover") is masked in text, but a change
// that happens to contain it is not refused.
const MinScanLen = 8

// maxBinaryLiteral bounds the inflated size of one binary hunk the scan
// reads (a larger one is scanned up to this size).
const maxBinaryLiteral = 64 << 20

// ScanPatch looks for configured secrets in what a patch (`git diff
// --binary`) adds: the lines it adds, file names and modes, and the
// new content of binary files (their literal or delta hunks, decoded).
// Lines the patch keeps or removes are not read: they were in the base.
// Secrets shorter than MinScanLen are not looked for.
// Each file's added lines are also read joined without their line breaks,
// so a base64 or hex dump wrapped over several lines is found too.
func (r *Redactor) ScanPatch(patch []byte) (PatchFinding, bool) {
	if r.Empty() || r.scan.Empty() {
		return PatchFinding{}, false
	}
	sc := r.scan
	var (
		file    string
		added   strings.Builder
		inHunk  bool
		binary  bool
		finding PatchFinding
		found   bool
	)
	check := func(s string) bool {
		if f, ok := sc.Find(s); ok {
			finding, found = PatchFinding{Found: f, File: r.String(file)}, true
		}
		return found
	}
	flush := func() bool {
		s := added.String()
		added.Reset()
		return check(s) || check(strings.ReplaceAll(s, "\n", ""))
	}
	lines := &lineReader{data: string(patch)}
	for {
		line, ok := lines.next()
		if !ok {
			break
		}
		switch {
		case strings.HasPrefix(line, "diff --git "):
			if flush() {
				return finding, true
			}
			file, inHunk, binary = diffPath(line), false, false
			if check(line) {
				return finding, true
			}
		case binary:
			// the hunks were read when the marker was seen
		case line == "GIT binary patch":
			binary = true
			if f, ok := sc.scanBinary(lines); ok {
				finding = PatchFinding{Found: f, File: r.String(file)}
				return finding, true
			}
		case strings.HasPrefix(line, "@@"):
			inHunk = true
		case inHunk && strings.HasPrefix(line, "+"):
			added.WriteString(line[1:])
			added.WriteByte('\n')
		case inHunk:
			// kept, removed, or "\ No newline at end of file"
		default:
			// a header line: new and old names, modes, index
			if strings.HasPrefix(line, "+++ ") && len(line) > 6 {
				file = strings.TrimPrefix(line[4:], "b/")
			}
			if check(line) {
				return finding, true
			}
		}
	}
	if flush() {
		return finding, true
	}
	return PatchFinding{}, false
}

// diffPath is the new path of a "diff --git a/x b/y" line, or the line's
// rest when it cannot tell.
func diffPath(line string) string {
	rest := strings.TrimPrefix(line, "diff --git ")
	if i := strings.LastIndex(rest, " b/"); i >= 0 {
		return rest[i+3:]
	}
	return rest
}

// scanBinary reads the hunks of a binary patch (its "literal N" or
// "delta N" headers, base85 lines and the blank line after each) and looks
// for secrets in the decoded bytes: a literal is the file's new content; a
// delta's inserted bytes are in its data as they are.
func (r *Redactor) scanBinary(lines *lineReader) (Found, bool) {
	for {
		head, ok := lines.peek()
		kind, size, _ := strings.Cut(head, " ")
		if !ok || (kind != "literal" && kind != "delta") {
			return Found{}, false // the binary part is over
		}
		lines.next()
		var enc bytes.Buffer
		for {
			line, ok := lines.next()
			if !ok || line == "" || decodeBase85Line(&enc, line) != nil {
				break
			}
		}
		n, _ := strconv.Atoi(size)
		data, _ := inflate(enc.Bytes(), min(max(n, 0), maxBinaryLiteral))
		if f, ok := r.Find(string(data)); ok {
			return f, true
		}
	}
}

// lineReader reads a patch line by line, without the line breaks.
type lineReader struct {
	data string
	pos  int
}

func (l *lineReader) peek() (string, bool) {
	if l.pos >= len(l.data) {
		return "", false
	}
	rest := l.data[l.pos:]
	if i := strings.IndexByte(rest, '\n'); i >= 0 {
		rest = rest[:i]
	}
	return rest, true
}

func (l *lineReader) next() (string, bool) {
	line, ok := l.peek()
	if ok {
		l.pos += len(line) + 1
	}
	return line, ok
}

// inflate decompresses zlib data, at most limit bytes.
func inflate(data []byte, limit int) ([]byte, error) {
	zr, err := zlib.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer func() { _ = zr.Close() }() // read only
	return io.ReadAll(io.LimitReader(zr, int64(limit)))
}

// base85 is git's base85 alphabet.
const base85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

var base85Value = func() (v [256]int8) {
	for i := range v {
		v[i] = -1
	}
	for i := range len(base85) {
		v[base85[i]] = int8(i)
	}
	return v
}()

// decodeBase85Line appends one line of a git binary hunk, decoded: its
// first character gives the line's byte count (A-Z 1-26, a-z 27-52), the
// rest is base85 in groups of five characters per four bytes.
func decodeBase85Line(out *bytes.Buffer, line string) error {
	if line == "" {
		return errors.New("empty line")
	}
	var n int
	switch c := line[0]; {
	case c >= 'A' && c <= 'Z':
		n = int(c-'A') + 1
	case c >= 'a' && c <= 'z':
		n = int(c-'a') + 27
	default:
		return fmt.Errorf("bad length %q", c)
	}
	data := line[1:]
	if len(data)%5 != 0 || len(data)/5*4 < n {
		return errors.New("bad base85 line")
	}
	for i := 0; i < len(data) && n > 0; i += 5 {
		var acc uint32
		for j := range 5 {
			d := base85Value[data[i+j]]
			if d < 0 {
				return errors.New("bad base85 character")
			}
			acc = acc*85 + uint32(d)
		}
		for j := 0; j < 4 && n > 0; j++ {
			out.WriteByte(byte(acc >> 24))
			acc <<= 8
			n--
		}
	}
	return nil
}
