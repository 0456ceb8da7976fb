package membership

import (
	"bytes"
	"context"
	"log"
	"log/slog"
)

// logBridge is the io.Writer behind the *log.Logger handed to memberlist. It
// turns memberlist's "[LEVEL] memberlist: message" lines into slog records.
type logBridge struct {
	logger *slog.Logger
}

// newStdLogger returns a *log.Logger (no prefix, no timestamp) writing into l.
func newStdLogger(l *slog.Logger) *log.Logger {
	return log.New(&logBridge{logger: l}, "", 0)
}

// Write logs each line of p. It never fails.
func (b *logBridge) Write(p []byte) (int, error) {
	for line := range bytes.SplitSeq(p, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		level, msg := parseLogLine(line)
		b.logger.Log(context.Background(), level, msg)
	}
	return len(p), nil
}

// parseLogLine splits a memberlist log line into a level and a message.
// Lines without a recognised "[LEVEL]" prefix are logged at Info.
func parseLogLine(line []byte) (slog.Level, string) {
	level := slog.LevelInfo
	if len(line) > 0 && line[0] == '[' {
		if end := bytes.IndexByte(line, ']'); end > 0 {
			if l, ok := levelOf(string(line[1:end])); ok {
				level = l
				line = bytes.TrimSpace(line[end+1:])
			}
		}
	}
	line = bytes.TrimPrefix(line, []byte("memberlist: "))
	return level, string(line)
}

// levelOf maps memberlist's level names to slog levels.
func levelOf(s string) (slog.Level, bool) {
	switch s {
	case "TRACE", "DEBUG":
		return slog.LevelDebug, true
	case "INFO":
		return slog.LevelInfo, true
	case "WARN", "WARNING":
		return slog.LevelWarn, true
	case "ERR", "ERROR":
		return slog.LevelError, true
	}
	return 0, false
}
