// Command bench runs holdfast, etcd and ZooKeeper side by side on this
// machine and prints the medians and the holdfast/peer ratios per workload,
// then the holdfast scale curve on the in-memory network. ZooKeeper comes
// from Debian's package (bench/install-zookeeper.sh); without it, its
// columns are empty and a note says why. See docs/BENCHMARKS.md.
//
//	cd bench && go run . -quick          # under 3 minutes on 2 cores
//	cd bench && go run .                 # the fuller run
//	cd bench && go run . -only lookup,acquire -replicas 3
package main
