package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/holdfast-go/holdfast/coordinator"
)

// printer narrates the run. Lines with tabs are aligned in columns until
// the next flush (a section header or an explicit flush).
type printer struct {
	tw *tabwriter.Writer
}

func newPrinter(out io.Writer) *printer {
	return &printer{tw: tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)}
}

// say prints one line (format ends without a newline).
func (p *printer) say(format string, args ...any) {
	fmt.Fprintf(p.tw, format+"\n", args...)
}

// flush aligns and writes what was said since the last flush.
func (p *printer) flush() { p.tw.Flush() }

// section starts a numbered part of the story.
func (p *printer) section(title string) {
	p.say("\n== %s", title)
	p.flush()
}

// round formats d in seconds with one decimal: timings vary from run to
// run, and a tenth of a second is all a reader needs.
func round(d time.Duration) string {
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// shardTable prints shard, owner and token for every shard, laid out in up
// to four column groups so that 16 shards take 8 lines.
func (p *printer) shardTable(c *coordinator.Coordinator) {
	n := c.Shards()
	groups := min(4, (n+7)/8)
	rows := (n + groups - 1) / groups
	var b strings.Builder
	for g := range groups {
		if g > 0 {
			b.WriteString("\t")
		}
		b.WriteString("  SHARD\tOWNER\tTOKEN")
	}
	p.say("%s", b.String())
	for r := range rows {
		b.Reset()
		for g := range groups {
			s := g*rows + r
			if s >= n {
				break
			}
			if g > 0 {
				b.WriteString("\t")
			}
			if o, ok := c.Owner(coordinator.ShardID(s)); ok {
				fmt.Fprintf(&b, "  %d\t%s\t%d", s, o.Node, o.Token)
			} else {
				fmt.Fprintf(&b, "  %d\t-\t-", s)
			}
		}
		p.say("%s", b.String())
	}
	p.flush()
}

// plural returns "1 shard" or "3 shards".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
