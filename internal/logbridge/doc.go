// Package logbridge routes the loggers of holdfast's dependencies (raft's
// hclog) into the caller's *slog.Logger.
package logbridge
