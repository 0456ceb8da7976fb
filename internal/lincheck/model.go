package lincheck

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Kind is an operation's kind.
type Kind uint8

// The operation kinds (see the package doc).
const (
	// Acquire asks for a grant and waits for it.
	Acquire Kind = iota + 1
	// TryAcquire asks for a grant and is refused when none is free.
	TryAcquire
	// Release gives the client's grant with Input.Token up.
	Release
	// Read is a Sync followed by reading the holders of the name.
	Read
	// Settle is the background release of the grant, if any, that the
	// failed acquire with ID Input.Ref produced. With an unknown output it
	// may free that grant or not yet; with a known one (the node saw it
	// commit: Recorder.Settled) it frees it.
	Settle
	// Lost drops the client's grant with Input.Token, which its holder saw
	// end without a release (its session ended).
	Lost
)

// String is the kind's name in a history's printout ("acquire",
// "try-acquire", ...).
func (k Kind) String() string {
	switch k {
	case Acquire:
		return "acquire"
	case TryAcquire:
		return "try-acquire"
	case Release:
		return "release"
	case Read:
		return "read"
	case Settle:
		return "settle"
	case Lost:
		return "lost"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Input is what an operation asked.
type Input struct {
	Kind Kind
	// Name is the lease's or semaphore's name.
	Name string
	// Client is who holds what the operation acquires or releases (a node
	// name); empty for a Read.
	Client string
	// Worker, if set, is the caller within its client (several callers of
	// one node): a refusal to a caller while another caller of the same
	// client holds the name is then legal. Empty: the client is one caller,
	// and a refusal while it holds the name is not.
	Worker string
	// Token is the grant a Release or Lost gives up.
	Token uint64
	// Ref is, for a Settle, the ID of the failed acquire it settles.
	Ref int
	// Settled is, for an acquire of unknown outcome, that its Settle
	// is known to have committed (Recorder.Settled): the acquire then
	// takes effect before that Settle or not at all.
	Settled bool
	// ID identifies the operation in the history (set by the Recorder).
	ID int
}

// Holder is one grant a Read saw.
type Holder struct {
	Client string
	Token  uint64
}

// Output is what an operation returned.
type Output struct {
	// Unknown: the operation failed, and may or may not take effect.
	Unknown bool
	// Token is an acquire's grant.
	Token uint64
	// Refused: a TryAcquire found nothing free.
	Refused bool
	// Local: the refusal came from the client itself, without asking the
	// cluster (another caller of the same client holds the name, or waits
	// in its queue): it gives nothing of the client's up, so it bounds no
	// earlier operation (see Bounds).
	Local bool
	// Holders is what a Read saw, in any order.
	Holders []Holder
}

// grant is one grant in a model state. A grant of a failed acquire
// (phantom: ref set) has no known token until a read shows one, which
// must lie in (lo, hi): above every token granted before it, below every
// token granted after.
type grant struct {
	client string
	worker string // Input.Worker of the acquire
	token  uint64 // 0: not known yet
	ref    int    // the failed acquire that made it (0: a seen grant)
	lo, hi uint64
}

// state is a model state: the grants held, the highest token granted, and
// the settled acquires half stepped. It is never modified once made.
type state struct {
	grants []grant // sorted (see sortGrants)
	floor  uint64
	// half lists (sorted) the IDs of failed acquires whose settlement
	// committed (Input.Settled) of which one step, and only one, was taken
	// without a grant: the settlement, so that the acquire can take no
	// effect, or the acquire taking none, so that the settlement frees
	// nothing. Both steps taken leave no trace, whatever their order.
	half []int
}

func sortGrants(gs []grant) {
	slices.SortFunc(gs, func(a, b grant) int {
		if c := strings.Compare(a.client, b.client); c != 0 {
			return c
		}
		if c := cmpU(a.token, b.token); c != 0 {
			return c
		}
		return a.ref - b.ref
	})
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (s state) key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d|%v|", s.floor, s.half)
	for _, g := range s.grants {
		fmt.Fprintf(&b, "%s/%s:%d:%d:%d:%d;", g.client, g.worker, g.token, g.ref, g.lo, g.hi)
	}
	return b.String()
}

// refusesItsOwner reports whether refusing in while g holds the name is
// illegal: g is the caller's own grant. A client that is one caller gives
// up any grant of its own before it asks again, so it is never refused
// by one. A caller among several (Input.Worker set) knows only the grants
// it was told of: a grant of its failed acquire (a phantom) may still
// hold the name when another caller of its client has the local turn,
// and the refusal is then true.
func (g grant) refusesItsOwner(in Input) bool {
	return g.client == in.Client && g.worker == in.Worker && (in.Worker == "" || g.ref == 0)
}

func (s state) with(g grant) state {
	gs := append(slices.Clone(s.grants), g)
	sortGrants(gs)
	s.grants = gs
	return s
}

func (s state) without(i int) state {
	s.grants = slices.Delete(slices.Clone(s.grants), i, i+1)
	return s
}

// halfway steps one of the two halves of settled acquire ref without a
// grant (see state.half), and reports whether the other half was taken
// already.
func (s state) halfway(ref int) (state, bool) {
	if j := slices.Index(s.half, ref); j >= 0 {
		s.half = slices.Delete(slices.Clone(s.half), j, j+1)
		return s, true
	}
	half := append(slices.Clone(s.half), ref)
	slices.Sort(half)
	s.half = half
	return s, false
}

// index returns the grant of client with token (or, token 0, the phantom
// of ref), or -1.
func (s state) index(client string, token uint64, ref int) int {
	for i, g := range s.grants {
		if g.client == client && ((token != 0 && g.token == token) || (token == 0 && ref != 0 && g.ref == ref)) {
			return i
		}
	}
	return -1
}

// LeaseModel is the model of leases: one holder per name.
func LeaseModel() porcupine.Model { return model(1) }

// SemaphoreModel is the model of semaphores of limit permits per name.
func SemaphoreModel(limit int) porcupine.Model { return model(limit) }

func model(limit int) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partitionByName,
		Init:      func() []any { return []any{state{}} },
		Step: func(st, in, out any) []any {
			return step(limit, st.(state), in.(Input), out.(Output))
		},
		Equal: func(a, b any) bool { return a.(state).key() == b.(state).key() },
		Hash: func(st any) uint64 {
			h := fnv.New64a()
			h.Write([]byte(st.(state).key()))
			return h.Sum64()
		},
		DescribeOperation: describeOperation,
		DescribeState:     describeState,
	}
	return nm.ToModel()
}

// partitionByName splits a history into one per name.
func partitionByName(ops []porcupine.Operation) [][]porcupine.Operation {
	by := map[string][]porcupine.Operation{}
	var names []string
	for _, op := range ops {
		n := op.Input.(Input).Name
		if _, ok := by[n]; !ok {
			names = append(names, n)
		}
		by[n] = append(by[n], op)
	}
	slices.Sort(names)
	out := make([][]porcupine.Operation, 0, len(names))
	for _, n := range names {
		out = append(out, by[n])
	}
	return out
}

// step returns every state the operation can lead to from s (none: it is
// illegal there).
func step(limit int, s state, in Input, out Output) []any {
	switch in.Kind {
	case Acquire, TryAcquire:
		return stepAcquire(limit, s, in, out)
	case Release:
		i := s.index(in.Client, in.Token, 0)
		if out.Unknown {
			if i < 0 {
				return []any{s}
			}
			return []any{s, s.without(i)}
		}
		if i < 0 {
			return nil
		}
		return []any{s.without(i)}
	case Settle, Lost:
		i := s.index(in.Client, in.Token, in.Ref)
		switch {
		case in.Kind == Settle && !out.Unknown && i < 0:
			// Committed, with no grant to free: before the acquire (which
			// then takes no effect), or after it took none.
			next, _ := s.halfway(in.Ref)
			return []any{next}
		case i < 0:
			return []any{s}
		case in.Kind == Settle && !out.Unknown:
			return []any{s.without(i)} // committed: the grant is freed
		}
		return []any{s, s.without(i)}
	case Read:
		if out.Unknown {
			return []any{s} // a read changes nothing
		}
		if next, ok := s.read(out.Holders); ok {
			return []any{next}
		}
		return nil
	}
	return nil
}

func stepAcquire(limit int, s state, in Input, out Output) []any {
	free := len(s.grants) < limit
	switch {
	case out.Unknown && in.Settled:
		next, settled := s.halfway(in.ID)
		if settled || !free {
			return []any{next} // after its settlement, the request is stale
		}
		return []any{next, s.with(grant{client: in.Client, worker: in.Worker, ref: in.ID, lo: s.floor, hi: math.MaxUint64})}
	case out.Unknown:
		if !free {
			return []any{s}
		}
		return []any{s, s.with(grant{client: in.Client, worker: in.Worker, ref: in.ID, lo: s.floor, hi: math.MaxUint64})}
	case out.Refused:
		if free || (limit == 1 && s.grants[0].refusesItsOwner(in)) {
			return nil
		}
		return []any{s}
	}
	if !free || out.Token <= s.floor {
		return nil
	}
	gs := slices.Clone(s.grants)
	for i := range gs {
		if gs[i].token == 0 {
			gs[i].hi = min(gs[i].hi, out.Token)
		}
	}
	next := state{grants: gs, floor: out.Token, half: s.half}
	return []any{next.with(grant{client: in.Client, worker: in.Worker, token: out.Token})}
}

// read matches what a read saw against s: every known grant exactly, and
// every phantom to a holder of its client with a token in its bounds
// (which it then takes). It returns the state with the phantoms' tokens
// known.
func (s state) read(seen []Holder) (state, bool) {
	if len(seen) != len(s.grants) {
		return s, false
	}
	left := slices.Clone(seen)
	var phantoms []int
	for i, g := range s.grants {
		if g.token == 0 {
			phantoms = append(phantoms, i)
			continue
		}
		j := slices.Index(left, Holder{Client: g.client, Token: g.token})
		if j < 0 {
			return s, false
		}
		left = slices.Delete(left, j, j+1)
	}
	if len(phantoms) == 0 {
		return s, true
	}
	gs := slices.Clone(s.grants)
	if !matchPhantoms(gs, phantoms, left) {
		return s, false
	}
	next := state{grants: gs, floor: s.floor, half: s.half}
	for _, g := range gs {
		next.floor = max(next.floor, g.token)
	}
	sortGrants(next.grants)
	return next, true
}

// matchPhantoms gives each phantom of gs (indexes ps) a distinct holder of
// left with its client and a token in its bounds, by backtracking.
func matchPhantoms(gs []grant, ps []int, left []Holder) bool {
	if len(ps) == 0 {
		return len(left) == 0
	}
	g := &gs[ps[0]]
	for j, h := range left {
		if h.Client != g.client || h.Token <= g.lo || h.Token >= g.hi {
			continue
		}
		g.token = h.Token
		if matchPhantoms(gs, ps[1:], slices.Delete(slices.Clone(left), j, j+1)) {
			return true
		}
		g.token = 0
	}
	return false
}
