//go:build !unix

package coordinator_test

// simNice does nothing where priorities are not set this way.
func simNice(int) error { return nil }
