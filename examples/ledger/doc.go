// Command ledger is a small service that embeds holdfast the way an
// application would, and shows on a real database why a lease alone is not a
// lock: a paused holder must be fenced by the resource, and the rejection
// must be visible.
//
// # What it does
//
// Every node of the cluster opens the same SQLite file (WAL mode): the
// protected resource. The cluster's shards are spread over the nodes by
// holdfast; for each shard it owns, a node appends an entry to that shard's
// ledger every -interval. Each append is one transaction:
//
//	BEGIN IMMEDIATE                                   -- the write lock is held from here
//	(with -check-before-write) lease.Checkpoint()     -- fails once the lease is lost or expiring
//	UPDATE shards SET seq = seq + 1, fence = :token
//	    WHERE shard = :s AND fence <= :token          -- fence.SQL.Update; 0 rows: fenced, ROLLBACK
//	INSERT INTO writes (shard, seq, token, node, at)
//	COMMIT
//
// A write the fence refuses is recorded in the rejected table (outside the
// refused transaction) and ends the shard's worker. With
// -check-before-write=false a worker never looks at its lease before
// writing: it models a process paused between its check and its write, and
// only the fence stops it. Such a worker also makes one more attempt after
// its lease has ended, so a zombie always knocks once.
//
// One node at a time also holds the named lease "auditor". The holder checks
// the ledger's invariants every second (per shard, in seq order: seq
// contiguous from 1, accepted tokens never decrease, and the fence equals
// the highest accepted token) and records the result in the audits table
// with a fenced write of its own (fence row "auditor" in the fences table).
//
// # Tables
//
//	shards(shard PRIMARY KEY, fence, seq)            the fence row and counter of each shard
//	writes(id, shard, seq, token, node, at)          accepted appends; at is wall-clock unix nanoseconds
//	rejected(id, shard, token, fence, node, at)      appends the fence refused; fence is the token it held
//	fences(name PRIMARY KEY, fence)                  fence rows of named leases ("auditor")
//	audits(id, token, node, at, rows, violations, problem)
//
// Every node creates the tables if they do not exist; a shard's fence row is
// created when the shard is first acquired.
//
// # Output
//
// Standard output carries one machine-readable line per event, an event
// name followed by key=value pairs:
//
//	listening node=n1 gossip=127.0.0.1:41234 rpc=127.0.0.1:41235 http=127.0.0.1:41236
//	ready node=n1 gossip=127.0.0.1:41234 rpc=127.0.0.1:41235 http=127.0.0.1:41236
//	preparing shard=3 from=n2 token=16     (a planned move will give this node shard 3: warm-up begins)
//	prepared shard=3 rows=118               (its rows are loaded; n2 still writes)
//	prepare-abandoned shard=3               (the move will not come: the loaded state is dropped)
//	acquired shard=3 token=17
//	loaded shard=3 token=17 rows=119 prepared=true   (prepared=false: loaded after the grant)
//	forwarding shard=3 token=16 to=n1 addr=127.0.0.1:7947   (the drain names the next owner)
//	wrote shard=3 token=17 seq=120          (the first accepted append of each grant only)
//	rejected shard=3 token=17 fence=23      (the fence held token 23)
//	check-failed shard=3 token=17           (the lease check inside the transaction failed)
//	released shard=3 token=17               (handed off: the worker stopped before the release)
//	lost shard=3 token=17                   (the worker stopped without a handoff: fenced, check failed, lease ended)
//	auditor token=25                        (this node holds the auditor lease)
//	audit token=25 rows=4000 violations=0   (its first audit, and any audit that finds a violation)
//	auditor-lost token=25
//	left node=n1                            (the node left the cluster for good: -leave-on-terminate, or holdfastctl leave)
//	stopped node=n1
//
// Logs (holdfast's included) go to standard error. The HTTP address (over
// HTTPS with a client certificate of the cluster's CA required, when the
// node has certificates and -http-tls is left true) serves /metrics (holdfast_* metrics, holdfast_fence_rejections_total and the
// ledger's own ledger_* counters) and holdfast's admin endpoints
// (/v1/status, /v1/shards, /v1/leases, /v1/semaphores, /healthz, /readyz),
// which holdfastctl reads, and the actions (POST /v1/leave, /v1/drain,
// /v1/undrain, /v1/leases/release, /v1/raft/step-down,
// /v1/raft/remove-peer: holdfastctl leave, drain, undrain, lease release,
// raft step-down, raft remove-peer), allowed over HTTPS to a client with a certificate of the CA, with
// -insecure to a loopback client only, and with -http-tls=false to nobody.
//
// SIGTERM or SIGINT shuts the node down gracefully: the auditor stops,
// holdfast hands every shard off (each worker stops before its shard is
// released), the session closes, and the process exits 0. A second signal
// kills it at once. A voter keeps its place in the raft configuration: a
// restart (a deploy) gets its vote back at once, and a node that never
// returns is replaced by an eligible node after DeadServerStabilization.
// With -leave-on-terminate the node leaves the cluster for good instead
// (Coordinator.Leave: a replacement voter is promoted first); when the
// leave is refused (fewer voters than -voters would remain and no node can
// replace it) the node stops keeping its vote and the process exits 1
// saying why. holdfastctl leave -confirm NAME does the same through the
// admin endpoint, after which the process exits 0. A decommissioned data
// dir must not be started again in the same cluster: wipe it first.
//
// # A planned move
//
// Before a planned move (rebalancing, Drain, SIGTERM's shutdown) the leader
// asks the next owner to prepare the shard: the worker side loads the
// shard's rows (and waits -shard-warmup) while the old owner keeps writing.
// Then the old owner is revoked; its Release names the next owner (the
// "forwarding" line: a service would send the requests it receives during
// its drain there), stops its worker after the write in progress, and the
// release commits; the shard is granted to the prepared node at once, whose
// worker writes at once with the state it loaded. The writes table shows
// the gap: the last write of the old token to the first of the new one.
//
//	n2: wrote ... token=16 (every -interval)    n1: preparing shard=3, prepared shard=3
//	n2: forwarding shard=3 to=n1, released shard=3 token=16
//	n1: acquired shard=3 token=17, loaded prepared=true, wrote seq=120 (at once)
//
// With -prepare=false the load, -shard-warmup included, happens after the
// grant, inside the gap. A crash move (the old owner gone) is never
// prepared.
//
// # Flags
//
//	-node NAME            this node's name, unique in the cluster (required)
//	-db PATH              the SQLite file every node shares (required)
//	-gossip HOST:PORT     gossip address (default 127.0.0.1:0)
//	-rpc HOST:PORT        raft and RPC address (default 127.0.0.1:0)
//	-advertise-gossip IP:PORT   gossip address other nodes reach, when not -gossip's (port 0: the bound port)
//	-advertise-rpc HOST:PORT    RPC address other nodes dial, when not -rpc's (port 0: the bound port)
//	-http HOST:PORT       metrics and admin address (default 127.0.0.1:0)
//	-join HOST:PORT,...   gossip addresses of existing members (a DNS name: every address it resolves to)
//	-data DIR             raft data dir; empty: a raft non-voter on in-memory stores
//	-allow-rename         start on a -data dir last used under another -node name (refused otherwise)
//	-leave-cluster ID     if the -data dir belongs to cluster ID, move its raft state and identity aside
//	                      (into left-ID-<time> in the dir) and start as a new node; a -data dir of
//	                      another cluster than the -join seeds' is refused and the error names this flag
//	-token-floor N        when this node creates a new cluster, its tokens start above N and above the
//	                      clock in µs: after every data dir was lost, give it
//	                      $(holdfastctl token-floor -sqlite ledger.db)
//	-expect N             bootstrap a new cluster once N nodes with -data see each other (needs -data)
//	-voters N             raft voters the cluster keeps: 1, 3 or 5 (default 3; -expect at most N)
//	-shards N             shard count, fixed when the cluster is created (default 16)
//	-ttl DURATION         session TTL (default 10s); below 5s the local timing profile is used
//	-drain DURATION       bound on a shard's drain at handoff (default: 5s, or 1s below -ttl 5s)
//	-interval DURATION    time between appends per shard (default 50ms)
//	-check-before-write   check the lease inside each write transaction (default true)
//	-shard-warmup DURATION  extra time loading a shard's state takes before its first write,
//	                      on top of reading its rows: stands for a large state (default 0)
//	-prepare              warm a shard up on its next owner before a planned move (default true);
//	                      false: the next owner loads it after the grant, inside the gap
//	-leave-on-terminate   on SIGTERM/SIGINT leave the cluster for good instead of keeping the vote
//	-raft-segment-size N  size of the raft log's segment files in bytes (default 0: 8 MiB; at least 64 KiB)
//	-churn DURATION       acquire and release the named lease churn-NODE every DURATION (default 0: never),
//	                      so that the raft log takes entries steadily (the shards' writes do not go through raft)
//	-certs DIR            the files holdfastctl cert writes: DIR/ca.pem, DIR/NODE.pem,
//	                      DIR/NODE-key.pem, and DIR/gossip.key when it exists
//	-ca, -cert, -key FILE the CA certificate, this node's certificate and key (override -certs)
//	-gossip-key FILE      the cluster's gossip key, base64 (default: -certs/gossip.key)
//	-http-tls             with certificates, serve -http over HTTPS requiring a client
//	                      certificate of the CA (default true); false: plain HTTP
//	-insecure             run without TLS and gossip encryption
//
// # Security
//
// The ledger runs with mutual TLS on its raft/RPC port (required) and
// encrypted gossip. Started with neither certificates nor -insecure it
// refuses, exit status 2, and prints the commands that make them: on a
// plaintext RPC port anyone who reaches it can forge raft commands. A
// cluster's files come from three commands:
//
//	go run ./cmd/holdfastctl cert create-ca                       # ~/.holdfast/certs: ca.pem, ca-key.pem, gossip.key
//	go run ./cmd/holdfastctl cert create-node -addr 127.0.0.1 n1  # n1.pem, n1-key.pem (and n2, n3)
//	go run ./cmd/holdfastctl cert create-client                   # client.pem, client-key.pem: holdfastctl's
//
// Each node needs ca.pem, gossip.key and its own NAME.pem and NAME-key.pem;
// ca-key.pem stays where certificates are made. -addr names the addresses
// HTTPS clients dial (the -http host), so they can verify the node.
// -insecure runs plaintext for a try on one machine; the gossip key and
// -http are then plain too.
//
// A configuration error names the flag to change, not holdfast's Config
// field: "-expect is 5, above -voters (3): ... raise -voters (1, 3 or 5) to
// at least 5, or lower -expect"; a missing certificate file names the file,
// the flag it came from and the holdfastctl cert command that makes it.
//
// Timings start from coordinator.DefaultConfig; with -ttl below 5s they
// come from coordinator.DefaultLocalConfig (fast raft, gossip and
// stabilization timings for one machine). Session.LeaseMargin is TTL/10 and
// Session.ExpiryGrace TTL/5 (at least the raft election timeout). The effective
// settings are logged at start.
//
// # Trying it
//
// The README's quick start runs three nodes on one machine, as
// quickstart_test.go does from the README's own lines. To watch the fence
// at work, start the third one unchecked, with a short TTL for all three:
//
//	go build -o /tmp/ledger ./examples/ledger
//	/tmp/ledger -node n1 -certs ~/.holdfast/certs -data /tmp/l1 -expect 3 -db /tmp/ledger.db -ttl 2s -shards 8 -gossip 127.0.0.1:7001 -http 127.0.0.1:8080
//	/tmp/ledger -node n2 -certs ~/.holdfast/certs -data /tmp/l2 -expect 3 -db /tmp/ledger.db -ttl 2s -shards 8 -join 127.0.0.1:7001 -http 127.0.0.1:8081
//	/tmp/ledger -node n3 -certs ~/.holdfast/certs -data /tmp/l3 -expect 3 -db /tmp/ledger.db -ttl 2s -shards 8 -join 127.0.0.1:7001 -http 127.0.0.1:8082 -check-before-write=false
//
// Then pause the third one for a few TTLs (kill -STOP, then kill -CONT) and
// look at what the fence refused:
//
//	sqlite3 /tmp/ledger.db 'SELECT * FROM rejected'
//	go run ./cmd/holdfastctl shards   # n1 at 127.0.0.1:8080, with ~/.holdfast/certs/client.pem
//
// (With -insecure instead of -certs: holdfastctl -addr http://127.0.0.1:8080 shards.)
// ledger_test.go does exactly this, and more, with four processes
// (-insecure); secure_test.go brings three up from holdfastctl cert files.
// netcut_test.go runs the ledger in Linux network namespaces (as root) and
// cuts real links: a voter cut for 3 × TTL then healed with another cut
// 2 s later, two of five voters cut at once, a voter killed for good with
// and without a node to replace it; each asserts no fence refusal, no
// stale write, every shard owned again within TTL + grace + an election +
// 2 s, and no configuration with fewer voters than wanted. restart_test.go
// restarts voters (a crash of another one in the window included, a
// rolling restart, -leave-on-terminate and holdfastctl leave), and
// recover_test.go recovers a lost quorum with holdfastctl data recover, as
// docs/OPERATIONS.md describes.
//
// # Containers
//
// Dockerfile (build it from the repository root) makes a static, non-root
// image of the ledger; deploy/kubernetes/ledger.yaml runs three of them as
// a StatefulSet that joins through its headless Service's DNS name.
package main
