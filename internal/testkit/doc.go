// Package testkit holds the helpers every package's tests share: one fake
// clock (Clock), one way to wait for a condition (Poll, Eventually) and one
// collector of a process's output by lines (Lines). It imports nothing of
// the module, so the tests of any package may use it, and no production
// code does.
//
// Waiting is polling a condition with a generous deadline, never a sleep
// as synchronisation: Eventually fails the test with the condition's last
// error, which says what was still missing.
package testkit
