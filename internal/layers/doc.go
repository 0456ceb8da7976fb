// Package layers holds no code: its test checks that imports flow one way
// through the repository's packages, so that the folders stay the
// architecture (docs/ARCHITECTURE.md, "Packages and the import rule").
//
// Every package has a rank; a package may import only packages of a lower
// rank (the building blocks of ranks 0 and 1 may also import each other):
//
//  0. leaf helpers: internal/codec, internal/atomicfile, internal/logbridge,
//     internal/netns, internal/leaktest, internal/pause, internal/walog,
//     internal/testkit (the tests' clock and poll)
//  1. the public building blocks: fsm, membership, transport (and
//     transport/memnet), shardown, fence, certs
//  2. internal/wire, the protocol every part may speak
//  3. the parts: internal/raftnode, session, cluster, keyring, tlsfiles,
//     viewstream, and any internal package not listed elsewhere
//  4. the parts built on sessions: internal/leases, internal/shards
//  5. coordinator, the facade
//  6. admin and holdfasttest, built on the facade
//  7. everything else: commands, examples, holdfasttest/metricset (a test
//     helper that runs a real coordinator)
//
// So no internal part imports coordinator, and parts of one rank do not
// import each other: what a part needs from a neighbour reaches it through
// its Options. The tests of packages below the facade do not import it
// either. Run it with
//
//	go test ./internal/layers
package layers
