package wire

import (
	"slices"
	"testing"

	"github.com/holdfast-go/holdfast/transport"
)

// TestProtocolNamesArePinned: method names, codes and field names are the
// protocol; a change here is a change of the wire format.
func TestProtocolNamesArePinned(t *testing.T) {
	pinned := map[string]string{
		MethodStats: "raft.stats", MethodApply: "raft.apply", MethodRemove: "raft.remove",
		MethodSync: "raft.sync", MethodConfirm: "raft.confirm", MethodKeepAlive: "session.keepalive",
		MethodGossipKeyring: "gossip.keyring", MethodBootstrapPrepare: "bootstrap.prepare",
		MethodBootstrapCommit: "bootstrap.commit", MethodBootstrapAbort: "bootstrap.abort",
		MethodWaitGrant: "lease.wait", MethodLeave: "raft.leave", CodeLeaveRefused: "leave_refused", CodeNotLeader: "not_leader", CodeRejected: "rejected", CodeShutdown: "shutdown",
		CodeBadMethod: "bad_method", CodeNoSession: "no_session", CodeLeaseHeld: "lease_held",
		CodeBusy: "busy", CodeSemFull: "sem_full", CodeSemLimit: "sem_limit",
		CodeGossipNotEncrypted: "gossip_not_encrypted", CodeGossipBadKey: "gossip_bad_key",
		CodeGossipNotInstalled: "gossip_key_not_installed", CodeGossipPrimary: "gossip_key_primary",
		MethodIdentity: "cluster.identity", CodeForeignCluster: "foreign_cluster",
	}
	for got, want := range pinned {
		if got != want {
			t.Errorf("%q is now %q", want, got)
		}
	}
	if len(pinned) != 28 {
		t.Errorf("%d distinct names, want 28 (two constants share a value)", len(pinned))
	}
	if CodeForeignCluster != transport.CodeForeignCluster {
		t.Errorf("CodeForeignCluster %q, the transport's %q", CodeForeignCluster, transport.CodeForeignCluster)
	}
	for _, tc := range []struct {
		v    any
		keys []string
	}{
		{ApplyRequest{Data: []byte{1}, BudgetNanos: 1}, []string{"budget", "data"}},
		{ApplyResult{Stale: true}, []string{"count", "holder", "index", "noop", "queued", "req", "stale", "token"}},
		{StatsReply{}, []string{"contact", "index", "term"}},
		{KeepAliveRequest{}, []string{"session"}},
		{ConfirmReply{ID: "a"}, []string{"id", "ok"}},
		{ConfirmRequest{ID: "a"}, []string{"id", "term"}},
		{BootProposal{}, []string{"by", "id", "servers"}},
		{BootProposal{ClusterID: "c"}, []string{"by", "cluster", "id", "servers"}},
		{IdentityReply{ClusterID: "c"}, []string{"cluster", "id"}},
		{KeyringRequest{}, []string{"key", "op"}},
		{StatsRequest{Health: &HealthReport{}}, []string{"health"}},
		{HealthReport{}, []string{"ft", "leader", "term", "voters"}},
		{VoterReport{}, []string{"healthy", "id", "name", "zone"}},
		{WaitGrantRequest{Semaphore: true}, []string{"after", "name", "req", "sem", "session", "wait"}},
		{WaitGrantReply{Granted: true, Token: 1, Index: 1}, []string{"granted", "index", "token"}},
		{LeaveRequest{ID: "x", Force: true, DryRun: true}, []string{"dry_run", "force", "id"}},
		{LeaveReply{Promoted: "y", Removed: true}, []string{"promoted", "removed"}},
	} {
		b, err := transport.Encode(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := transport.Decode(b, &m); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, tc.keys) {
			t.Errorf("%T encodes fields %v, want %v", tc.v, keys, tc.keys)
		}
	}
}
