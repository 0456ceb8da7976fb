// Command grantgen writes coordinator/grantmethods_gen.go: the methods
// Lease, Permit and ShardLease share (Token, Done, Context, Err, Remaining,
// Checkpoint), each declared on its own type with its own doc, so that go
// doc lists them, and each delegating to the grant's one belief. The
// coordinator's go:generate line runs it:
//
//	go generate ./coordinator
//
// Its test fails when the file in the tree is not what it writes.
package main
