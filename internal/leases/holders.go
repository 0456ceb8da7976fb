package leases

import (
	"context"

	"github.com/holdfast-go/holdfast/fsm"
	"github.com/holdfast-go/holdfast/internal/viewstream"
)

// Holder is who holds a lease or a permit, as a replica shows it. Its
// fields are the facade's holder's, in the same order, so that one
// converts to the other.
type Holder struct {
	Node    string
	NodeID  string
	Addr    string // the holding session's address
	Session string
	Token   uint64 // the grant's fencing token
	Value   string // the grant's holder value (leases only)
}

// holderAt fills h.Addr from h's session in v, without allocating.
func holderAt(v *fsm.View, h Holder) Holder {
	h.Addr, _ = v.SessionAddr(h.Session)
	return h
}

// HolderOf returns the holder of the named lease in v, without
// allocating; ok is false when nobody holds it.
func HolderOf(v *fsm.View, name string) (h Holder, ok bool) {
	sess, node, nodeID, token, ok := v.HolderNode(name)
	if !ok {
		return Holder{}, false
	}
	return holderAt(v, Holder{Node: node, NodeID: nodeID, Session: sess, Token: token, Value: v.HolderValue(name)}), true
}

// SemHolders returns the holders of the named semaphore's permits in v,
// in grant (token) order, each converted by conv; nil when nobody holds
// one.
func SemHolders[T any](v *fsm.View, name string, conv func(Holder) T) []T {
	s, ok := v.Semaphore(name)
	if !ok {
		return nil
	}
	out := make([]T, 0, len(s.Holders))
	for _, h := range s.Holders {
		out = append(out, conv(holderAt(v, Holder{Node: h.Node, NodeID: h.NodeID, Session: h.Session, Token: h.Token})))
	}
	return out
}

// List returns every held lease in v, sorted by name, each made by info
// from its name, its holder and its number of waiters.
func List[T any](v *fsm.View, info func(name string, h Holder, waiters int) T) []T {
	ls := v.Leases()
	out := make([]T, 0, len(ls))
	for _, l := range ls {
		h := holderAt(v, Holder{Node: l.HolderNode, NodeID: l.HolderNodeID, Session: l.Holder, Token: l.Token, Value: l.Value})
		out = append(out, info(l.Name, h, len(l.Waiters)))
	}
	return out
}

// Observe feeds ch (capacity 1) with the holder of the named lease, each
// converted by conv: the current one first, then every change (a zero
// Holder when nobody holds it). Changes may be coalesced, but the latest
// is never dropped. It closes ch and returns when ctx ends or stop is
// closed; run it in a goroutine the caller joins.
func Observe[T any](ctx context.Context, stop <-chan struct{}, views func() *fsm.View, name string, ch chan T,
	conv func(Holder) T) {
	viewstream.Stream(ctx, stop, views, ch, func(v *fsm.View) (T, Holder, bool) {
		h, _ := HolderOf(v, name)
		return conv(h), h, true
	})
}
