// Package holdfasttest starts in-process holdfast clusters for tests, the
// way net/http/httptest starts servers: n coordinators on loopback TCP or on
// an in-memory faulty network (package memnet), with helpers to kill,
// restart, wipe, pause and partition nodes and to wait on conditions with a
// deadline.
//
// Nodes start from coordinator.DefaultLocalConfig, which sets Insecure:
// without Options.TLS they run without TLS, which is fine on loopback or
// memnet in a test and nowhere else. Options.TLS gives every node a
// certificate from a throwaway CA (Cluster.CA) with TLS required.
//
// Every node logs to the test's log (level from HOLDFAST_TEST_LOG: debug,
// info, warn (default) or error). A Cluster registers its Close with
// t.Cleanup, so each test ends with every node closed.
package holdfasttest
