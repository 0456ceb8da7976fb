// Package logbridge routes the loggers of holdfast's dependencies (raft's
// hclog) into the caller's *slog.Logger. It keeps their noise down: while
// the coordinator closes, their warnings and errors are logged at debug
// level, and a warning or error about one peer that repeats (raft logs a
// failed heartbeat to an unreachable voter several times a second until
// the voter leaves its configuration) is logged once per RepeatWindow at
// its level, the repeats in between at debug level. Raft's warnings about
// the steps of a normal start (no peers yet, a new cluster's first
// election) are logged at info level.
package logbridge
