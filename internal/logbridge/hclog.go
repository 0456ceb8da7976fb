package logbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// HCLog returns an hclog.Logger that writes every record to l with the
// record's level, message and fields. hclog's level is set from what l
// enables, so disabled records cost little. While closing (may be nil)
// reports true, warnings and errors are logged at debug level: a library
// that is shutting down reports every connection it loses, which is
// expected then. A warning or error that repeats within RepeatWindow is
// logged at its level once, then at debug level (see RepeatWindow).
func HCLog(l *slog.Logger, name string, closing func() bool) hclog.Logger {
	return newHCLog(l, name, closing, time.Now)
}

// newHCLog is HCLog with the clock that times repeats.
func newHCLog(l *slog.Logger, name string, closing func() bool, now func() time.Time) hclog.Logger {
	level := hclog.Error
	for _, c := range []struct {
		s slog.Level
		h hclog.Level
	}{{slog.LevelWarn, hclog.Warn}, {slog.LevelInfo, hclog.Info}, {slog.LevelDebug, hclog.Debug}} {
		if l.Enabled(context.Background(), c.s) {
			level = c.h
		}
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Level:      level,
		Output:     &jsonWriter{l: l, closing: closing, repeats: repeats{now: now}},
		JSONFormat: true,
	})
}

// jsonWriter turns hclog's JSON lines into slog records.
type jsonWriter struct {
	mu      sync.Mutex
	buf     []byte
	l       *slog.Logger
	closing func() bool
	repeats repeats // guarded by mu
}

func (w *jsonWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *jsonWriter) emit(line []byte) {
	var rec map[string]any
	if err := json.Unmarshal(line, &rec); err != nil {
		w.l.Info(string(line))
		return
	}
	msg, _ := rec["@message"].(string)
	lvl, _ := rec["@level"].(string)
	level := slog.LevelInfo
	switch lvl {
	case "trace", "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	if l, ok := normalStart(msg, rec); ok && level > l {
		level = l
	}
	suppressed := 0
	if level > slog.LevelInfo && w.closing != nil && w.closing() {
		level = slog.LevelDebug
	} else if level > slog.LevelInfo {
		var loud bool
		if loud, suppressed = w.repeats.note(msg, rec); !loud {
			level = slog.LevelDebug
		}
	}
	keys := make([]string, 0, len(rec))
	for k := range rec {
		if k != "@message" && k != "@level" && k != "@timestamp" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	attrs := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		name := k
		if k == "@module" {
			name = "module"
		}
		attrs = append(attrs, slog.Any(name, rec[k]))
	}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int("repeated", suppressed))
	}
	w.l.LogAttrs(context.Background(), level, msg, attrs...)
}
