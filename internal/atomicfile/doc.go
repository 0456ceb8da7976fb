// Package atomicfile writes small files atomically and durably: readers
// see either the old content or the new, never a mix, and the new content
// survives a crash once Write has returned.
package atomicfile
