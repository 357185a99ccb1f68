package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/droverhq/drover/internal/status"
	"github.com/droverhq/drover/internal/table"
)

// session is who is asking, and their session's ID.
type session struct{ user, id string }

type sessionKey struct{}

func withSession(ctx context.Context, s session) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

func sessionOf(ctx context.Context) session {
	s, _ := ctx.Value(sessionKey{}).(session)
	return s
}

// page is the data of every page: the layout's and the view's.
type page struct {
	Title string
	View  string // the nav entry, and the script's view
	Base  string
	User  string
	CSRF  string
	// Live names what the page's script follows: data-* attributes of body.
	Live map[string]string
	Data any
}

// parsePages parses each page template with the layout.
func parsePages(funcs template.FuncMap) (map[string]*template.Template, error) {
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(templateFS, n)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", n, err)
		}
		out[name] = t
	}
	return out, nil
}

// handlerFunc is a page handler: it writes a page or returns an error.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// httpError is an error with the status to answer it with.
type httpError struct {
	code int
	msg  string
}

func (e httpError) Error() string { return e.msg }

func errStatus(code int, format string, args ...any) error {
	return httpError{code: code, msg: fmt.Sprintf(format, args...)}
}

// page wraps a page handler: it waits for the mirror and renders errors as
// an error page (escaped like everything else).
func (s *Server) page(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-s.mirror.ready:
		case <-r.Context().Done():
			return
		case <-time.After(30 * time.Second):
			http.Error(w, "the console is still loading the state bucket", http.StatusServiceUnavailable)
			return
		}
		err := h(w, r)
		if err == nil {
			return
		}
		code := http.StatusInternalServerError
		if he, ok := err.(httpError); ok {
			code = he.code
		} else {
			s.log.Warn("console: page", "path", r.URL.Path, "err", err)
		}
		w.WriteHeader(code)
		_ = s.render(w, r, "error", "Error", "", map[string]any{"Code": code, "Status": http.StatusText(code), "Message": err.Error()}, nil, true)
	}
}

// render writes a page; headerSent tells that the status was written.
func (s *Server) render(w http.ResponseWriter, r *http.Request, name, title, view string, data any, live map[string]string, headerSent ...bool) error {
	t := s.pages[name]
	if t == nil {
		return fmt.Errorf("console: no template %s", name)
	}
	sess := sessionOf(r.Context())
	p := page{Title: title, View: view, Base: s.base, User: sess.user, CSRF: s.csrfToken(sess.id), Live: live, Data: data}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", p); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, err := buf.WriteTo(w)
	return err
}

// funcs are the templates' helpers; none of them returns template.HTML.
func (s *Server) funcs() template.FuncMap {
	return template.FuncMap{
		"dur":     fmtDuration,
		"secs":    func(f float64) string { return fmtDuration(time.Duration(f * float64(time.Second))) },
		"bytes":   table.Bytes,
		"time":    fmtTime,
		"ago":     func(t time.Time) string { return fmtAgo(t, time.Now()) },
		"pct":     func(a, b int) int { return percent(a, b) },
		"pretty":  prettyJSON,
		"title":   func(col string) string { return columnTitles[col] },
		"hit":     hitRatio,
		"spark":   sparkPoints,
		"u64":     func(n uint64) string { return strconv.FormatUint(n, 10) },
		"shell":   shellQuote,
		"add":     func(a, b int) int { return a + b },
		"sub":     func(a, b int) int { return a - b },
		"speedup": func(f float64) string { return fmt.Sprintf("%.1f×", f) },
		"dict": func(kv ...any) map[string]any {
			m := map[string]any{}
			for i := 0; i+1 < len(kv); i += 2 {
				k, _ := kv[i].(string)
				m[k] = kv[i+1]
			}
			return m
		},
		"jsonlist": func(v []int) string { b, _ := json.Marshal(v); return string(b) },
		"elapsed":  func(t Task) string { return fmtDuration(t.Elapsed(time.Now())) },
		"running":  func(t Task) int64 { return t.Running(time.Now()) },
	}
}

func fmtDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "–"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func fmtAgo(t, now time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return fmtDuration(now.Sub(t)) + " ago"
}

func percent(a, b int) int {
	if b <= 0 {
		return 0
	}
	return a * 100 / b
}

// maxPretty bounds the JSON text the console shows of one field.
const maxPretty = 64 << 10

// prettyJSON indents raw JSON for a <pre>, bounded; it stays text.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "{}" || string(raw) == "null" {
		return ""
	}
	// Decoded and encoded again, without the \u003c escapes of Go's
	// encoder: the template escapes the text for HTML.
	var buf bytes.Buffer
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if dec.Decode(&v) != nil || enc.Encode(v) != nil {
		buf.Reset()
		buf.Write(raw)
	}
	if buf.Len() > maxPretty {
		return buf.String()[:maxPretty] + "\n… (truncated)"
	}
	return buf.String()
}

func hitRatio(c status.Cache) string {
	if c.HitRatio == nil {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", *c.HitRatio*100)
}

// sparkPoints is the SVG polyline of counts in a 300x40 box.
func sparkPoints(counts []int) string {
	hi := 1
	for _, c := range counts {
		hi = max(hi, c)
	}
	var b strings.Builder
	for i, c := range counts {
		x := float64(i) * 300 / float64(max(len(counts)-1, 1))
		y := 38 - float64(c)*36/float64(hi)
		fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
	}
	return strings.TrimSpace(b.String())
}

// shellQuote quotes s for a POSIX shell when it needs it, for the drover
// commands a page shows.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
