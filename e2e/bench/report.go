package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
)

// Report is the Markdown the benchmark prints: written to out as each
// part is complete, and kept for the results file.
type Report struct {
	out io.Writer
	mu  sync.Mutex
	all strings.Builder
}

// NewReport writes to out.
func NewReport(out io.Writer) *Report { return &Report{out: out} }

func (r *Report) write(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all.WriteString(s)
	_, _ = io.WriteString(r.out, s)
}

// String is everything written so far.
func (r *Report) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.all.String()
}

// Heading writes a Markdown heading of level n.
func (r *Report) Heading(n int, format string, args ...any) {
	r.write("\n" + strings.Repeat("#", n) + " " + fmt.Sprintf(format, args...) + "\n\n")
}

// Para writes a paragraph.
func (r *Report) Para(format string, args ...any) {
	r.write(fmt.Sprintf(format, args...) + "\n\n")
}

// Table writes a Markdown table.
func (r *Report) Table(header []string, rows [][]string) {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|")
	for range header {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, row := range rows {
		cells := make([]string, len(header))
		copy(cells, row)
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	b.WriteString("\n")
	r.write(b.String())
}

// Target writes one target line: what was wanted, what was measured, and
// PASS or MISS (UNKNOWN when the measurement is missing).
func (r *Report) Target(what, measured string, pass, known bool) {
	verdict := "MISS"
	switch {
	case !known:
		verdict = "UNKNOWN"
	case pass:
		verdict = "PASS"
	}
	r.write(fmt.Sprintf("- **%s** target %s: measured %s\n", verdict, what, measured))
}

// Failure notes a section that could not finish.
func (r *Report) Failure(section string, err error) {
	r.write(fmt.Sprintf("\n**%s did not complete:** %s\n\n", section, strings.ReplaceAll(err.Error(), "\n", " ")))
}

// Formatting helpers for table cells.

// Num formats a number with thousands separators and no decimals.
func Num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	neg := v < 0
	s := fmt.Sprintf("%.0f", math.Abs(v))
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// F formats with the given decimals; "–" for NaN.
func F(v float64, decimals int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf("%.*f", decimals, v)
}

// Pct formats a fraction as a percentage.
func Pct(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf("%.0f %%", v*100)
}

// MB formats bytes as MB (10^6).
func MB(b float64) string { return F(b/1e6, 1) + " MB" }
