//go:build !linux

package holdfasttest

// portUse describes nothing outside Linux.
func portUse(port int) string { return "(not known on this system)" }
