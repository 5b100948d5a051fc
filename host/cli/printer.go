package cli

import (
	"cmp"
	"fmt"
	"io"
	"text/tabwriter"
)

// printer writes a command's text output and keeps the first write error,
// so that output to a closed pipe or a full disk fails the command instead
// of passing unnoticed. After an error it writes nothing more; err reports
// it.
type printer struct {
	w   io.Writer
	err error
}

func newPrinter(w io.Writer) *printer { return &printer{w: w} }

// printf writes a formatted line (or part of one).
func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// println writes its operands and a newline, as fmt.Fprintln.
func (p *printer) println(args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintln(p.w, args...)
	}
}

// Write makes p the target of a tabwriter (see columns).
func (p *printer) Write(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	n, err := p.w.Write(b)
	p.err = err
	return n, err
}

// columns starts a block of tab-separated lines that end aligns and writes
// to p.
func (p *printer) columns() *columns {
	tw := tabwriter.NewWriter(p, 0, 0, 2, ' ', 0)
	return &columns{printer: printer{w: tw}, tw: tw, out: p}
}

// columns is a block of lines aligned at their tabs.
type columns struct {
	printer
	tw  *tabwriter.Writer
	out *printer
}

// end writes the aligned block; an error stays in the printer it came from.
func (c *columns) end() {
	err := c.tw.Flush()
	if c.out.err == nil {
		c.out.err = cmp.Or(c.err, err)
	}
}

// warnf writes a diagnostic to w (the command's stderr). An error writing
// it is dropped: there is nowhere left to report it, and the exit code
// already says what happened.
func warnf(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}
