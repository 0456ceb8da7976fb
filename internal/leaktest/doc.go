// Package leaktest checks, at the end of a test binary, that every
// goroutine the tests started has ended, allowing goroutines of
// dependencies that end on their own shortly after a Shutdown (memberlist's
// probe waits out its probe interval) the time to do so.
package leaktest
