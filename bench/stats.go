package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// latencies collects per-operation durations of one round.
type latencies []time.Duration

// quantile returns the q-quantile (0 ≤ q ≤ 1) by the nearest-rank method.
func (l latencies) quantile(q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// median returns the median of xs (the mean of the two middle values for an
// even count), or NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// hfName is holdfast's system name in the tables; the peers' names are
// their peerKind names.
const hfName = "holdfast"

// metric is one measured quantity: its name, its unit, whether larger is
// better, and one value per round for each system (holdfast and each peer).
type metric struct {
	workload string
	name     string
	unit     string // "ops/s", "ms", "ns", "MiB", ...
	higher   bool   // larger is better (throughput)
	vals     map[string][]float64
}

// add records one value of system.
func (m *metric) add(system string, v float64) { m.vals[system] = append(m.vals[system], v) }

// of returns system's values.
func (m *metric) of(system string) []float64 { return m.vals[system] }

// ratio returns holdfast/peer of the medians (NaN without values).
func (m *metric) ratio(peer string) float64 { return median(m.vals[hfName]) / median(m.vals[peer]) }

// better says in words how holdfast compares with peer: "2.1× better" or
// "1.3× worse", judged by the metric's direction.
func (m *metric) better(peer string) string {
	r := m.ratio(peer)
	if math.IsNaN(r) || math.IsInf(r, 0) || r == 0 {
		return ""
	}
	if !m.higher {
		r = 1 / r
	}
	if r >= 1 {
		return fmt.Sprintf("%.2f× better than %s", r, peer)
	}
	return fmt.Sprintf("%.2f× worse than %s", 1/r, peer)
}

// report accumulates metrics and prints them as one table per section.
type report struct {
	sections []*section
}

type section struct {
	title    string
	replicas int      // the replica count of its side by side workloads
	peers    []string // the peer columns, in order (a peer that did not run shows —)
	metrics  []*metric
	notes    []string
}

func (r *report) section(title string, peers []string) *section {
	s := &section{title: title, peers: peers}
	r.sections = append(r.sections, s)
	return s
}

// metric returns the section's metric with this workload and name,
// creating it.
func (s *section) metric(workload, name, unit string, higher bool) *metric {
	for _, m := range s.metrics {
		if m.workload == workload && m.name == name {
			return m
		}
	}
	m := &metric{workload: workload, name: name, unit: unit, higher: higher, vals: map[string][]float64{}}
	s.metrics = append(s.metrics, m)
	return m
}

func (s *section) note(format string, args ...any) {
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
}

// print writes the section as a Markdown table: holdfast, then each peer
// and the holdfast/peer ratio, then the verdicts.
func (s *section) print(w io.Writer) {
	fmt.Fprintf(w, "\n### %s\n\n", s.title)
	head, align := []string{"workload", "metric", hfName}, []string{"---", "---", "---:"}
	for _, p := range s.peers {
		head, align = append(head, p, hfName+"/"+p), append(align, "---:", "---:")
	}
	var rows [][]string
	for _, m := range s.metrics {
		hf := m.of(hfName)
		row := []string{m.workload, m.name, fmtValue(median(hf), m.unit, len(hf))}
		var verdicts []string
		for _, p := range s.peers {
			v := m.of(p)
			row = append(row, fmtValue(median(v), m.unit, len(v)), fmtRatio(m.ratio(p)))
			if b := m.better(p); b != "" {
				verdicts = append(verdicts, b)
			}
		}
		rows = append(rows, append(row, strings.Join(verdicts, "; ")))
	}
	alignedTable(w, append(head, ""), append(align, "---"), rows)
	for _, n := range s.notes {
		fmt.Fprintf(w, "\n%s\n", n)
	}
}

func fmtValue(v float64, unit string, n int) string {
	if n == 0 || math.IsNaN(v) {
		return "—"
	}
	var num string
	switch {
	case v >= 100:
		num = fmt.Sprintf("%.0f", v)
	case v >= 10:
		num = fmt.Sprintf("%.1f", v)
	default:
		num = fmt.Sprintf("%.2f", v)
	}
	return num + " " + unit
}

func fmtRatio(r float64) string {
	switch {
	case math.IsNaN(r) || math.IsInf(r, 0):
		return "—"
	case r < 0.01:
		return fmt.Sprintf("%.2g", r)
	case r < 10:
		return fmt.Sprintf("%.3f", r)
	default:
		return fmt.Sprintf("%.0f", r)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// table prints rows of cells as a Markdown table with the given header:
// the first column aligned left, the others right.
func table(w io.Writer, header []string, rows [][]string) {
	align := make([]string, len(header))
	for i := range align {
		align[i] = "---:"
	}
	align[0] = "---"
	alignedTable(w, header, align, rows)
}

// alignedTable prints rows as a Markdown table with one alignment cell
// ("---", "---:") per column.
func alignedTable(w io.Writer, header, align []string, rows [][]string) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(header, " | "))
	fmt.Fprintf(w, "|%s|\n", strings.Join(align, "|"))
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
}
