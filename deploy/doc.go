// Package deploy holds no code: it is the module of the deployment files'
// tests. kubernetes/ledger.yaml runs examples/ledger as a three-node
// StatefulSet, and examples/ledger/Dockerfile builds its image. The tests
// decode every manifest strictly (an unknown or misspelt field is an
// error) into the Kubernetes API types, and check the wiring that a typo
// would break without kubectl noticing: the headless Service that -join
// names, the ports the ledger's flags bind, the probes' paths on a real
// ledger process, the volumes of -data and -db, and that the arguments
// parse with the ledger's own flags.
//
// It is a module of its own so that the library does not depend on
// k8s.io/api. Run its tests with
//
//	cd deploy && go test ./...
package deploy
