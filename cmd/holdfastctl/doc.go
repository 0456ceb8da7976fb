// Command holdfastctl shows what one holdfast node knows of its cluster, by
// asking the admin endpoints (package admin) that the application serves;
// acts on the cluster through them (drain, lease release, raft step-down and
// remove-peer, leave); and, offline, reads and recovers the data dir of a
// stopped node.
//
// Usage:
//
//	holdfastctl [-addr HOST:PORT|URL] [-json] [-timeout D] [-owner NAME]
//	            [-certs DIR | -ca FILE -cert FILE -key FILE] [-server-name NAME]
//	            status|members|shards|leases|semaphores
//	holdfastctl [-addr ...] [TLS flags] [-timeout D] -confirm NAME drain NODE | undrain NODE
//	holdfastctl [-addr ...] [TLS flags] [-timeout D] -confirm NAME lease release LEASE
//	holdfastctl [-addr ...] [TLS flags] [-timeout D] -confirm NAME raft step-down
//	holdfastctl [-addr ...] [TLS flags] [-timeout D] -confirm NAME [-force] raft remove-peer NODE
//	holdfastctl [-addr ...] [TLS flags] [-timeout D] -confirm NAME [-force] leave
//	holdfastctl data peers [-json] DIR
//	holdfastctl data recover [-keep ID,...] -confirm NAME DIR
//	holdfastctl cert create-ca|create-node NAME|create-client [-dir DIR] [-force] ...
//	holdfastctl token-floor -sqlite FILE [-columns TABLE.COLUMN,...] [-v]
//	holdfastctl data check [-json] DIR
//
// Commands:
//
//	status      the node, its raft role and leader, voters, session, readiness, formation progress (GET /v1/status)
//	members     every node the answering node's gossip knows of, with its zone and placement tags (the
//	            members of GET /v1/status)
//	shards      every shard with its state, owner and token (GET /v1/shards); a first line
//	            "STALE: no raft leader known since T" when the answering node knows no leader
//	shards plan  what the raft leader's balancer would move in its next round and why: per node its
//	            capacity, shards and load now and after the round, and its target (GET /v1/shards/plan)
//	shards pin SHARD NODE  keep SHARD on NODE (a fenced handoff there now, and back after NODE's
//	            restarts) until unpinned (POST /v1/shards/pin)
//	shards unpin SHARD  the balancer places SHARD again (POST /v1/shards/unpin)
//	shards move SHARD NODE  hand SHARD to NODE now, a fenced handoff; returns once NODE owns it, with its
//	            new token (POST /v1/shards/move). The balancer may move it again later: pin it to keep it.
//	shards rule NAME FIRST-LAST:TAG[,TAG...]  placement rule NAME: only nodes carrying every TAG
//	            (Config.Shards.Tags, and zone=Z for a node of zone Z) own shards FIRST to LAST; the
//	            balancer moves them off other nodes, and leaves unowned what no node passes (POST
//	            /v1/shards/rule). shards lists the rules after the table.
//	shards unrule NAME  remove placement rule NAME (POST /v1/shards/unrule)
//	leases      every held named lease with its holder, token, waiters and holder value (GET /v1/leases)
//	semaphores  every semaphore in use, its limit, its holders (NODE:TOKEN) and waiters (GET /v1/semaphores)
//	drain NODE  NODE hands its shards to the others and takes none until undrained (POST /v1/drain)
//	undrain NODE  NODE takes shards again (POST /v1/undrain)
//	lease release LEASE  end the current grant of LEASE, a stuck holder's: the next waiter gets it with a
//	            new token (POST /v1/leases/release). The holder's node ends its belief first; when it does
//	            not answer, the leader releases the lease without it, and the output says that the old
//	            holder may still believe it holds the lease until its node learns of the release or its
//	            session lapses: only a fenced resource, which refuses the old token once the next holder
//	            wrote, stops its writes then.
//	raft step-down  the raft leader hands leadership to another voter (POST /v1/raft/step-down)
//	raft remove-peer NODE  take NODE (name or raft ID) out of the raft configuration, a replacement voter
//	            promoted first when one is ready (POST /v1/raft/remove-peer); refused while the voters
//	            left could not form a quorum, for the raft leader itself (step it down first), and for a
//	            node gossip shows alive (decommission it with leave, which hands its shards off), unless
//	            -force
//	leave       decommission the node at -addr for good (POST /v1/leave): it leaves the raft
//	            configuration, a replacement voter promoted first, and stops; refused when fewer
//	            voters than the cluster keeps would remain and no node can replace it, unless
//	            -force. A restart needs no leave: a stopped voter keeps its vote.
//	help        print this usage
//
// # Acting commands
//
// The commands that change the cluster need -confirm with the name of the
// node at -addr: the node checks it before it does anything, so that a
// mistyped -addr never acts on the wrong cluster or node. The node must
// also authorise the action (package admin's Options.Authorize): the ledger
// example allows it over HTTPS with a client certificate of the cluster's
// CA (cert create-client's files), or from loopback when it runs -insecure.
// All but leave are carried out by the raft leader, which logs each one
// with who asked (the client certificate's name and the remote address).
// An acting command waits up to 2m unless -timeout is given. Exit status 1
// with the node's reason when it refuses.
//
// # Offline commands on a data dir
//
// data peers and data recover open the data dir of a stopped node (they
// refuse while a node runs on it: its raft/LOCK is held). peers prints the
// raft configuration it holds (the latest in its log, committed or not),
// its last index and term and the node's identity. recover is the way back
// from a lost quorum: it rewrites the configuration to the surviving voters
// (this node alone by default; -keep lists their IDs, this node's among
// them), keeping the replicated state (hashicorp/raft's RecoverCluster: the
// log is applied and kept as a snapshot at its last index, so tokens go on
// from where they were). It needs -confirm with the node name recorded in
// the data dir, and refuses a data dir that is not a voter's. See
// docs/OPERATIONS.md for the whole procedure.
//
// Flags (before or after the command):
//
//	-addr     where the admin handler is served: HOST:PORT, or a URL
//	          (http://host:port/prefix) when it is mounted under a prefix or
//	          behind https. Default $HOLDFASTCTL_ADDR, else 127.0.0.1:8080
//	          (the first node of the README's quick start).
//	-json     print the JSON answer, pretty-printed, instead of a table;
//	          members prints the members array of the status answer. The
//	          documents decode into the types of package admin.
//	-timeout  give up after this long (default 5s).
//	-owner    with shards: list only the shards owned by node NAME.
//	-certs    a directory with ca.pem, client.pem and client-key.pem (what
//	          cert create-ca and cert create-client write): the admin endpoint
//	          is read over HTTPS with that client certificate. Without any TLS
//	          flag, ~/.holdfast/certs is used when those three files are there
//	          (for a HOST:PORT -addr; a node that serves plain HTTP is then read
//	          over HTTP).
//	-ca       PEM file of the CA that signed the node's certificate: the
//	          admin endpoint is read over HTTPS (HOST:PORT becomes https).
//	-cert, -key  holdfastctl's client certificate and key (cert
//	          create-client), for endpoints that require one.
//	-server-name  verify the node's certificate for this name (a node
//	          name) instead of the -addr host.
//	-confirm  acting commands: the name of the node at -addr.
//	-force    leave: even with no replacement (never the last voter, nor
//	          without a quorum to commit the removal); raft remove-peer: a
//	          node gossip shows alive.
//
// # Certificates
//
// holdfastctl cert makes a cluster's TLS files, in -dir (default
// ~/.holdfast/certs, outside any source tree; created if missing). Nothing is replaced unless -force is given; key
// files are written with mode 0600; every file written is listed.
//
//	cert create-ca             ca.pem (the CA certificate, for every node),
//	                           ca-key.pem (its key: keep it off the nodes) and
//	                           gossip.key (the cluster's gossip key, for every node)
//	cert create-node NAME      NAME.pem and NAME-key.pem, signed by -dir's CA; SANs:
//	                           NAME and each -addr (host names as DNS SANs, IP
//	                           addresses as IP SANs)
//	cert create-client         client.pem and client-key.pem: client auth only, no
//	                           SANs, so it opens admin endpoints but cannot act as a node
//
// Flags: -dir, -force, -validity (CA: 10 years, others: 1 year), -name (the
// common name of the CA or the client), -addr (create-node, repeatable or
// comma-separated).
//
// # The token floor
//
// holdfastctl token-floor reads the highest fencing token an SQLite
// database holds, opened read-only, and prints it alone on standard output
// (0 for empty tables). A cluster created anew after every data dir was
// lost is given it as its floor (ledger -token-floor, or
// Config.Cluster.TokenFloor), so that its first token is above every token
// the database accepted. -columns lists the fence columns as TABLE.COLUMN,
// comma-separated (default: the ledger's, shards.fence,fences.fence); -v
// lists each column's highest on standard error. Exit status 1 when the
// file cannot be read or lacks a column, 2 for a usage error.
//
// # Data dirs
//
// holdfastctl data check DIR inspects the raft data of a stopped node's
// data dir (its -data) without changing anything, and without the node
// (the data dir's lock is taken: it fails while a node runs on it): the
// raft log's format (walog, or bolt for data dirs written before the
// write-ahead log), each segment with its entries and terms, the log's
// range and last term, the current term and vote, the snapshots, what the
// node's next start would repair (a torn last write cut, a copy kept as
// NAME.broken; an older format upgraded), and the problems that make the
// node refuse to start on it (a record damaged in the middle of the log, a
// missing or foreign segment, a lost term and vote, a gap between the
// snapshot and the log), each naming the file and the offset. It exits 1
// when there is a problem (or the dir cannot be examined), 0 otherwise;
// -json prints the report (raftnode.DataReport) as JSON. A node that
// cannot trust its data dir is restored from a backup of it, or removed
// from the cluster and started again with an empty data dir (it joins
// under a new identity and autopilot makes it a voter once caught up).
//
// Exit status: 0 on success; 1 when the node cannot be reached, does not
// answer in time, or answers with an error or a document that is not the
// admin handler's (a one-line message on standard error names the address,
// and, for the usual mistakes, the flag to pass: -ca/-cert/-key or -certs
// for a node serving HTTPS, http:// for one serving plain HTTP, the HTTP
// address when -addr names a raft/RPC or gossip port);
// 2 for a usage error (unknown command or flag, missing command, bad flag
// value), after printing the usage on standard error. -h, -help and help
// print the usage on standard output and exit 0.
//
// Every answer comes from the answering node's local view; ask another node
// to compare views.
package main
