package membership

import (
	"bytes"
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/memberlist"
)

// delegate adapts memberlist's delegate interfaces (Delegate, EventDelegate,
// AliveDelegate, MergeDelegate, ConflictDelegate) to Membership. memberlist
// calls the event and alive methods with its node lock held, so they only
// take m.mu (a leaf lock) and never call back into memberlist.
type delegate struct {
	m *Membership
}

var (
	_ memberlist.Delegate         = (*delegate)(nil)
	_ memberlist.EventDelegate    = (*delegate)(nil)
	_ memberlist.AliveDelegate    = (*delegate)(nil)
	_ memberlist.MergeDelegate    = (*delegate)(nil)
	_ memberlist.ConflictDelegate = (*delegate)(nil)
)

// NodeMeta returns the encoded local Meta (at most MaxMetaSize bytes).
func (d *delegate) NodeMeta(limit int) []byte {
	d.m.mu.Lock()
	defer d.m.mu.Unlock()
	if len(d.m.metaBytes) > limit {
		return nil
	}
	return append([]byte(nil), d.m.metaBytes...)
}

// NotifyMsg handles this package's gossip messages (leave notices).
func (d *delegate) NotifyMsg(b []byte) {
	d.m.handleMessage(b)
}

// GetBroadcasts hands queued leave notices to memberlist's gossip.
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.m.bcast.GetBroadcasts(overhead, limit)
}

// LocalState carries no state in push/pull exchanges.
func (d *delegate) LocalState(join bool) []byte { return nil }

// MergeRemoteState ignores the (empty) remote state.
func (d *delegate) MergeRemoteState(buf []byte, join bool) {}

// NotifyJoin records a member that became alive.
func (d *delegate) NotifyJoin(n *memberlist.Node) {
	d.m.observe(n, Join)
}

// NotifyUpdate records new metadata of an alive member.
func (d *delegate) NotifyUpdate(n *memberlist.Node) {
	d.m.observe(n, Update)
}

// NotifyLeave records a member reported dead or left.
func (d *delegate) NotifyLeave(n *memberlist.Node) {
	d.m.observeGone(n)
}

// NotifyAlive filters alive messages: duplicate names, bad metadata and
// nodes refused by Config.Accept.
func (d *delegate) NotifyAlive(n *memberlist.Node) error {
	return d.m.admit(n.Name, n.Address(), n.Meta, false)
}

// NotifyMerge vets the peers of a join's push/pull exchange; any refused
// alive peer cancels the whole merge.
func (d *delegate) NotifyMerge(peers []*memberlist.Node) error {
	joining := d.m.joining.Load() > 0
	for _, p := range peers {
		if p.State != memberlist.StateAlive && p.State != memberlist.StateSuspect {
			continue
		}
		if err := d.m.admit(p.Name, p.Address(), p.Meta, joining); err != nil {
			d.m.logger.Warn("refusing to merge with the pool", slog.String("peer", p.Name),
				slog.String("addr", p.Address()), slog.Any("error", err))
			d.m.noteRefusal(err)
			return err
		}
	}
	return nil
}

// NotifyConflict logs two nodes claiming the same name.
func (d *delegate) NotifyConflict(existing, other *memberlist.Node) {
	d.m.logger.Warn("node name conflict", slog.String("peer", existing.Name),
		slog.String("existing_addr", existing.Address()), slog.String("other_addr", other.Address()))
}

// admit decides whether the node name at addr with the encoded meta may be
// (or stay) a member. The local node is always admitted at its own address.
// joining says that this node is merging into a pool through Join, so a peer
// with our name means that our name is taken.
func (m *Membership) admit(name, addr string, rawMeta []byte, joining bool) error {
	m.mu.Lock()
	local := m.localAddr
	var known *Member
	var knownRaw []byte
	if e, ok := m.members[name]; ok && (e.member.State == Alive || e.member.State == Suspect) {
		mb := e.member
		known, knownRaw = &mb, e.rawMeta
	}
	m.mu.Unlock()
	if name == m.cfg.NodeName {
		if local == "" || local == addr {
			return nil // ourselves (local is empty while memberlist starts)
		}
		if joining {
			return fmt.Errorf("node name %q is already in use by %s: %w", name, addr, ErrDuplicateName)
		}
		return fmt.Errorf("refused the node at %s: node name %q is in use by this node (%s): %w",
			addr, name, local, ErrDuplicateName)
	}
	if known != nil && known.Addr != addr {
		return fmt.Errorf("node name %q is already in use by %s (refused the node at %s): %w",
			name, known.Addr, addr, ErrDuplicateName)
	}
	// Every alive message that gossip relays about a member comes here, in
	// a pool of N nodes about N·log N times per change; one whose meta is
	// the member's as recorded reuses its decoded form.
	var meta Meta
	if known != nil && knownRaw != nil && bytes.Equal(knownRaw, rawMeta) {
		meta = known.Meta
	} else {
		var err error
		if meta, err = DecodeMeta(rawMeta); err != nil {
			return fmt.Errorf("node %q at %s: invalid meta: %w", name, addr, err)
		}
	}
	if m.cfg.Accept == nil {
		return nil
	}
	if err := m.cfg.Accept(Member{Name: name, Addr: addr, Meta: meta, State: Alive}); err != nil {
		return fmt.Errorf("node %q at %s refused: %w", name, addr, err)
	}
	return nil
}

// observe records a Join or Update of n and emits the event.
func (m *Membership) observe(n *memberlist.Node, kind EventKind) {
	meta, err := DecodeMeta(n.Meta)
	if err != nil && n.Name != m.cfg.NodeName {
		m.logger.Warn("member has invalid meta", slog.String("peer", n.Name), slog.Any("error", err))
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.members[n.Name]
	if !ok {
		e = &entry{}
		m.members[n.Name] = e
	}
	wasAlive := ok && (e.member.State == Alive || e.member.State == Suspect)
	if !wasAlive {
		e.member.Since = now
		m.alive.Add(1)
		kind = Join
	}
	if n.Name != m.cfg.NodeName {
		e.leaving = false
	}
	e.member.Name, e.member.Addr, e.member.Meta, e.member.State = n.Name, n.Address(), meta, Alive
	e.rawMeta = nil
	if err == nil {
		e.rawMeta = n.Meta
	}
	m.events.push(Event{Kind: kind, Member: e.member})
	m.reapLocked(now)
}

// observeGone records that n was reported dead or left and emits the event.
func (m *Membership) observeGone(n *memberlist.Node) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.members[n.Name]
	if !ok || (e.member.State != Alive && e.member.State != Suspect) {
		return
	}
	m.alive.Add(-1)
	kind, state := Fail, Failed
	if e.leaving {
		kind, state = Leave, Left
	}
	e.member.State, e.member.Since = state, now
	m.events.push(Event{Kind: kind, Member: e.member})
	m.reapLocked(now)
}

// reapLocked forgets members Failed or Left for longer than ReapAfter.
func (m *Membership) reapLocked(now time.Time) {
	for name, e := range m.members {
		gone := e.member.State == Failed || e.member.State == Left
		if gone && now.Sub(e.member.Since) > m.cfg.ReapAfter {
			delete(m.members, name)
		}
	}
}
