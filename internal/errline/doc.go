// Package errline joins errors on one line: errors.Join's form (each
// error matched by errors.Is and errors.As) without its newlines, for
// errors that end up in a log line or a one-line message.
package errline
