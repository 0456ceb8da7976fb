package fsm

import "testing"

// TestSessionAddr: a session's address is read without a copy, empty for a
// session created without one, and absent for an unknown session.
func TestSessionAddr(t *testing.T) {
	a := &applier{t: t, f: New()}
	a.do(Command{Op: OpSessionCreate, Session: &SessionCmd{ID: "sa", Node: "na", NodeID: "ia", Addr: "a:1", TTLNanos: 1e9}})
	a.do(Command{Op: OpSessionCreate, Session: &SessionCmd{ID: "sb", Node: "nb", NodeID: "ib", TTLNanos: 1e9}})
	v := a.f.View()
	for _, tc := range []struct {
		id, addr string
		ok       bool
	}{{"sa", "a:1", true}, {"sb", "", true}, {"zz", "", false}} {
		if addr, ok := v.SessionAddr(tc.id); addr != tc.addr || ok != tc.ok {
			t.Errorf("SessionAddr(%q) = %q, %v; want %q, %v", tc.id, addr, ok, tc.addr, tc.ok)
		}
	}
	if n := testing.AllocsPerRun(100, func() { v.SessionAddr("sa") }); n != 0 {
		t.Errorf("SessionAddr allocates %v times", n)
	}
}
