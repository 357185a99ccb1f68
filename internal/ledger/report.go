package ledger

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/subjects"
)

// Dimensions a cost report groups by.
const (
	ByWorkflow = "workflow"
	ByType     = "type"
	ByRole     = "role"
	ByModel    = "model"
)

// Dimensions lists them in their column order.
var Dimensions = []string{ByWorkflow, ByType, ByRole, ByModel}

// Totals are the tokens and money of a group of role events.
type Totals struct {
	Calls        int64   `json:"calls"`
	CacheHits    int64   `json:"cache_hits"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	USD          float64 `json:"usd"`
	SavedUSD     float64 `json:"saved_usd"`
	WallMS       int64   `json:"wall_ms"`
}

func (t *Totals) add(c Cost, cached bool) {
	if cached {
		t.CacheHits++
	} else {
		t.Calls++
	}
	t.InputTokens += c.InputTokens
	t.OutputTokens += c.OutputTokens
	t.USD += c.USD
	t.SavedUSD += c.SavedUSD
	t.WallMS += c.WallMS
}

// Row is one group of a report.
type Row struct {
	Workflow string `json:"workflow,omitempty"`
	Type     string `json:"type,omitempty"`
	Role     string `json:"role,omitempty"`
	Model    string `json:"model,omitempty"`
	Totals
}

// Report sums the cost of role events, grouped by the chosen dimensions.
// Its memory follows the number of groups and of tasks (for their types),
// never the number of events.
type Report struct {
	by    map[string]bool
	rows  map[Row]*Totals
	types map[[2]string]string // task -> type, from task_accepted
	Total Totals
}

// NewReport groups by the given dimensions (none: one total).
func NewReport(by []string) (*Report, error) {
	r := &Report{by: map[string]bool{}, rows: map[Row]*Totals{}, types: map[[2]string]string{}}
	for _, d := range by {
		d = strings.TrimSpace(d)
		if !contains(Dimensions, d) {
			return nil, fmt.Errorf("group by %q: want %s", d, strings.Join(Dimensions, ", "))
		}
		r.by[d] = true
	}
	return r, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Add folds one event in: task_accepted gives its task's type, a role
// event its cost (a role event without one counts as a call at no cost).
func (r *Report) Add(ev *subjects.AuditEvent) {
	key := [2]string{ev.WorkflowID, ev.TaskID}
	switch ev.EventType {
	case subjects.EventTaskAccepted:
		var req struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(ev.Input, &req)
		r.types[key] = req.Type
		return
	case subjects.EventPlannerDecision, subjects.EventImplementerChange, subjects.EventJudgeVerdict:
	default:
		return
	}
	c, _ := FromMetadata(ev.Metadata)
	if c.WallMS == 0 && !ev.Cached {
		c.WallMS = ev.DurationMS
	}
	row := Row{}
	if r.by[ByWorkflow] {
		row.Workflow = ev.WorkflowID
	}
	if r.by[ByType] {
		row.Type = r.types[key]
	}
	if r.by[ByRole] {
		row.Role = string(ev.Actor)
	}
	if r.by[ByModel] {
		row.Model = c.Model
	}
	t := r.rows[row]
	if t == nil {
		t = &Totals{}
		r.rows[row] = t
	}
	t.add(c, ev.Cached)
	r.Total.add(c, ev.Cached)
}

// Rows returns the groups, most expensive first.
func (r *Report) Rows() []Row {
	out := make([]Row, 0, len(r.rows))
	for k, t := range r.rows {
		k.Totals = *t
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].USD != out[j].USD {
			return out[i].USD > out[j].USD
		}
		return fmt.Sprint(out[i].Workflow, out[i].Type, out[i].Role, out[i].Model) < fmt.Sprint(out[j].Workflow, out[j].Type, out[j].Role, out[j].Model)
	})
	return out
}

// WriteJSON writes {"rows": [...], "total": {...}}.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Rows  []Row  `json:"rows"`
		Total Totals `json:"total"`
	}{r.Rows(), r.Total})
}

// WriteTable writes one line per group and the total.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	var head []string
	for _, d := range Dimensions {
		if r.by[d] {
			head = append(head, strings.ToUpper(d))
		}
	}
	head = append(head, "CALLS", "CACHED", "INPUT", "OUTPUT", "USD", "SAVED USD")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	line := func(cells []string, t Totals) {
		cells = append(cells, fmt.Sprint(t.Calls), fmt.Sprint(t.CacheHits), fmt.Sprint(t.InputTokens), fmt.Sprint(t.OutputTokens),
			fmt.Sprintf("%.4f", t.USD), fmt.Sprintf("%.4f", t.SavedUSD))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	for _, row := range r.Rows() {
		var cells []string
		for _, d := range Dimensions {
			if r.by[d] {
				v := map[string]string{ByWorkflow: row.Workflow, ByType: row.Type, ByRole: row.Role, ByModel: row.Model}[d]
				if v == "" {
					v = "-"
				}
				cells = append(cells, redact.Terminal(v))
			}
		}
		line(cells, row.Totals)
	}
	total := []string{"TOTAL"}
	for i := 1; i < len(head)-6; i++ {
		total = append(total, "")
	}
	if len(head) == 6 {
		total = nil
	}
	line(total, r.Total)
	return tw.Flush()
}
