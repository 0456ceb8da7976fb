package testkit

import (
	"bytes"
	"sync"
)

// Lines is an io.Writer that collects what is written to it (a child
// process's standard output, say) by complete lines. A writer and readers
// may use it at once; the zero value is ready to use.
type Lines struct {
	mu    sync.Mutex
	lines []string
	part  []byte
}

// Write appends p; every newline in it completes a line, and bytes after
// the last newline wait for the next Write. It never fails.
func (o *Lines) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.part = append(o.part, p...)
	for {
		i := bytes.IndexByte(o.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		o.lines = append(o.lines, string(o.part[:i]))
		o.part = o.part[i+1:]
	}
}

// Lines returns a copy of the complete lines written so far, without their
// newlines, in order.
func (o *Lines) Lines() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.lines...)
}
