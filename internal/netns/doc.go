// Package netns builds throwaway Linux network namespaces for tests that
// cut real network links between real processes.
//
// New creates one namespace per node plus a hub namespace holding a
// bridge; each node's namespace has an interface eth0 with an address in
// a private test subnet (10.99.0.0/24), joined by a veth pair to a port of
// the bridge. Nothing is created in the caller's own namespace: the
// addresses exist only inside the test's namespaces, so traffic to them
// never leaves them, and several tests may run at once (names are unique
// per Net; each Net has its own bridge, so the subnet may repeat).
//
// Node.Cut sets the node's bridge port down (ip link set DEV down): from
// then on no packet passes between that node and any other, in either
// direction; Node.Heal sets it up again. Node.Command runs a program inside
// the node's namespace (ip netns exec) and Node.DialContext opens a
// connection from inside it, for an http.Client that reaches a process
// listening on the node's address.
//
// Everything is torn down when the test ends. Creating namespaces needs
// root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and the ip command: Available
// tells whether they can be made here, and Require skips the test when
// they cannot, or fails it when HOLDFAST_REQUIRE_NETNS=1 is set (CI sets
// it, so a runner that silently cannot run these tests is noticed).
package netns
