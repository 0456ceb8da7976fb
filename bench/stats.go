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

// metric is one measured quantity: its name, its unit, whether larger is
// better, and one value per round for each system.
type metric struct {
	workload string
	name     string
	unit     string // "ops/s", "ms", "ns", "MiB", ...
	higher   bool   // larger is better (throughput)
	hf, etcd []float64
}

// ratio returns holdfast/etcd of the medians.
func (m *metric) ratio() float64 { return median(m.hf) / median(m.etcd) }

// better says in words how holdfast compares: "2.1× better" or "1.3×
// worse", judged by the metric's direction.
func (m *metric) better() string {
	r := m.ratio()
	if math.IsNaN(r) || math.IsInf(r, 0) || r == 0 {
		return ""
	}
	if !m.higher {
		r = 1 / r
	}
	if r >= 1 {
		return fmt.Sprintf("holdfast %.2f× better", r)
	}
	return fmt.Sprintf("holdfast %.2f× worse", 1/r)
}

// report accumulates metrics and prints them as one table per section.
type report struct {
	sections []*section
}

type section struct {
	title    string
	replicas int // the replica count of its side by side workloads
	metrics  []*metric
	notes    []string
}

func (r *report) section(title string) *section {
	s := &section{title: title}
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
	m := &metric{workload: workload, name: name, unit: unit, higher: higher}
	s.metrics = append(s.metrics, m)
	return m
}

func (s *section) note(format string, args ...any) {
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
}

// print writes the section as a Markdown table.
func (s *section) print(w io.Writer) {
	fmt.Fprintf(w, "\n### %s\n\n", s.title)
	fmt.Fprintln(w, "| workload | metric | holdfast | etcd | holdfast/etcd | |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---|")
	for _, m := range s.metrics {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", m.workload, m.name,
			fmtValue(median(m.hf), m.unit, len(m.hf)), fmtValue(median(m.etcd), m.unit, len(m.etcd)),
			fmtRatio(m.ratio()), m.better())
	}
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

// table prints rows of cells as a Markdown table with the given header.
func table(w io.Writer, header []string, rows [][]string) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(header, " | "))
	seps := make([]string, len(header))
	for i := range seps {
		seps[i] = "---"
		if i > 0 {
			seps[i] = "---:"
		}
	}
	fmt.Fprintf(w, "|%s|\n", strings.Join(seps, "|"))
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
}
