package lincheck

import (
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Recorder collects a history from concurrent callers. Its methods are
// safe for concurrent use.
type Recorder struct {
	now func() int64

	mu      sync.Mutex
	ops     []rec
	workers map[string]int
}

// rec is one recorded operation.
type rec struct {
	worker    int
	in        Input
	out       Output
	call, ret int64
	returned  bool
	discarded bool // not part of the history (a read that failed)
	// until, if bounded, is the latest moment an operation of unknown
	// outcome may take effect (see Settled).
	until   int64
	bounded bool
}

// NewRecorder returns an empty recorder reading time from now (in any
// unit, increasing; nil: nanoseconds of the monotonic clock since the
// call), so that a simulation can record its virtual time.
func NewRecorder(now func() int64) *Recorder {
	if now == nil {
		start := time.Now()
		now = func() int64 { return int64(time.Since(start)) }
	}
	return &Recorder{now: now, workers: map[string]int{}}
}

// Call is one recorded operation, from its call to its end.
type Call struct {
	r *Recorder
	i int
}

// Begin records the call of an operation in by worker (one goroutine, or
// one row of the visualization) and returns it; End or Fail records its
// end. An operation never ended counts as failed.
func (r *Recorder) Begin(worker string, in Input) *Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.beginLocked(worker, in)
}

func (r *Recorder) beginLocked(worker string, in Input) *Call {
	w, ok := r.workers[worker]
	if !ok {
		w = len(r.workers)
		r.workers[worker] = w
	}
	in.ID = len(r.ops) + 1
	r.ops = append(r.ops, rec{worker: w, in: in, call: r.now()})
	return &Call{r: r, i: len(r.ops) - 1}
}

// End records that the operation returned out (out.Unknown: it failed and
// may still take effect).
func (c *Call) End(out Output) {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	o := &c.r.ops[c.i]
	o.out, o.ret, o.returned = out, c.r.now(), true
	o.out.Holders = slices.Clone(out.Holders)
}

// EndAs is End for an acquire whose grant went to another client than the
// one it began with (a node whose session was replaced while it waited):
// the history shows the operation as that client's.
func (c *Call) EndAs(client string, out Output) {
	c.r.mu.Lock()
	c.r.ops[c.i].in.Client = client
	c.r.mu.Unlock()
	c.End(out)
}

// Fail records that the operation failed: it may still take effect.
func (c *Call) Fail() { c.End(Output{Unknown: true}) }

// Discard leaves the operation out of the history: one that failed
// without any effect, such as a read whose Sync failed.
func (c *Call) Discard() {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	c.r.ops[c.i].discarded = true
}

// ID returns the operation's ID in the history (Input.ID).
func (c *Call) ID() int { return c.i + 1 }

// Settle records, from now on, the background release of whatever the
// failed acquire may have been granted (call it once the acquire failed),
// and returns it for Settled.
func (r *Recorder) Settle(worker string, failed *Call) *Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.ops[failed.i].in
	c := r.beginLocked(worker, Input{Kind: Settle, Name: f.Name, Client: f.Client, Ref: f.ID})
	r.ops[c.i].out = Output{Unknown: true}
	return c
}

// Now reads the Recorder's clock.
func (r *Recorder) Now() int64 { return r.now() }

// Settled records that the settlement c (from Settle) is known to have
// committed by at (on the Recorder's clock: see Now): a committed
// settlement gives its request up, so the failed acquire it settles took
// effect by then if at all (a later copy of the request is stale), and the
// settlement then freed the acquire's grant, if there was one. The node may
// have committed it before the acquire returned, so the settlement is
// taken to span the acquire's call to at.
func (r *Recorder) Settled(c *Call, at int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := &r.ops[c.i]
	f := &r.ops[o.in.Ref-1]
	o.call = min(o.call, f.call)
	o.ret, o.returned, o.out = max(at, o.call+1), true, Output{}
	if !f.bounded || at < f.until {
		f.until, f.bounded = at, true
	}
	f.in.Settled = true
}

// ReleasedBy records that the failed release c (ended with Fail) is known
// to have committed by at (on the Recorder's clock): the node's background
// release of the grant committed then, so the grant was freed between the
// call and at.
func (r *Recorder) ReleasedBy(c *Call, at int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := &r.ops[c.i]
	o.ret, o.returned, o.out = max(at, o.call+1), true, Output{}
}

// SettleSince is Settle for a grant that may have ended before the failed
// acquire returned: from since on (on the Recorder's clock; not before the
// acquire's call), as when the session that got it lapsed meanwhile. It
// returns the settlement for Settled.
func (r *Recorder) SettleSince(worker string, failed *Call, since int64) *Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.ops[failed.i].in
	c := r.beginLocked(worker, Input{Kind: Settle, Name: f.Name, Client: f.Client, Ref: f.ID})
	r.ops[c.i].out = Output{Unknown: true}
	r.ops[c.i].call = max(min(since, r.ops[c.i].call), r.ops[failed.i].call)
	return c
}

// Replaced records, for an acquire that was granted (or a TryAcquire that
// was refused) after its client's session was replaced while it waited,
// what the replaced session may have been granted first: the request may
// have been committed for the old session, a grant the caller never saw,
// which ended with that session before the request was asked again for the
// new one. It is an acquire with an unknown outcome over the same span as
// the call, and its settlement from the call on (call it once the call has
// ended).
func (r *Recorder) Replaced(worker string, granted *Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.ops[granted.i]
	in := Input{Kind: Acquire, Name: g.in.Name, Client: g.in.Client}
	u := r.beginLocked(worker, in)
	o := &r.ops[u.i]
	o.call, o.ret, o.returned, o.out = g.call, g.ret, true, Output{Unknown: true}
	c := r.beginLocked(worker, Input{Kind: Settle, Name: in.Name, Client: in.Client, Ref: o.in.ID})
	r.ops[c.i].out = Output{Unknown: true}
	r.ops[c.i].call = g.call
}

// Lost records that the client's grant of name with token ended without a
// release (its holder saw it end: a lost session): it is dropped at some
// time from now on.
func (r *Recorder) Lost(worker, name, client string, token uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.beginLocked(worker, Input{Kind: Lost, Name: name, Client: client, Token: token})
	r.ops[c.i].out = Output{Unknown: true}
}

// Bounds say how long an operation whose outcome is unknown may still
// take effect; by default until the end of the history.
type Bounds struct {
	// AcquireBeforeNext: an unknown acquire takes effect, if at all,
	// before the client's next acquire of the name with a known outcome
	// returns (a later request of the client makes an earlier one stale).
	// A refusal the client gave itself (Output.Local) asked nothing and
	// bounds nothing, here and below.
	AcquireBeforeNext bool
	// ReleaseBeforeNext: an unknown release, and a settlement, take effect
	// before the client's next acquire of the name with a known outcome
	// returns (that acquire gives up any earlier grant of the client).
	ReleaseBeforeNext bool
}

// LeaseBounds are the bounds of holdfast's leases, for a client that keeps
// one session.
var LeaseBounds = Bounds{AcquireBeforeNext: true, ReleaseBeforeNext: true}

// SemaphoreBounds are the bounds of holdfast's semaphores (a client may
// hold several permits: a new acquire gives no earlier one up).
var SemaphoreBounds = Bounds{AcquireBeforeNext: true}

// Finish returns the history recorded so far as porcupine operations: an
// operation with an unknown outcome returns at the latest moment b allows,
// or after everything else.
func (r *Recorder) Finish(b Bounds) []porcupine.Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	end := r.now() + 1
	for _, o := range r.ops {
		end = max(end, o.ret+1)
	}
	out := make([]porcupine.Operation, 0, len(r.ops))
	for i, o := range r.ops {
		if o.discarded {
			continue
		}
		if !o.returned && o.in.Kind != Settle && o.in.Kind != Lost {
			o.out = Output{Unknown: true}
		}
		ret := o.ret
		if o.out.Unknown {
			ret = end
			if bound, ok := r.nextKnownAcquire(i, b); ok {
				ret = bound
			}
			if o.bounded {
				ret = min(ret, o.until)
			}
		}
		out = append(out, porcupine.Operation{ClientId: o.worker, Input: o.in, Call: o.call, Output: o.out, Return: max(ret, o.call+1)})
	}
	return out
}

// nextKnownAcquire returns the return time of the first acquire of the
// same client and name that began after operation i ended (or, for a
// Settle or Lost, began) and returned a known outcome, if b bounds i's
// kind by it.
func (r *Recorder) nextKnownAcquire(i int, b Bounds) (int64, bool) {
	o := r.ops[i]
	switch o.in.Kind {
	case Acquire, TryAcquire:
		if !b.AcquireBeforeNext {
			return 0, false
		}
	case Release, Settle:
		if !b.ReleaseBeforeNext {
			return 0, false
		}
	default:
		return 0, false
	}
	from := o.ret
	if !o.returned {
		from = o.call
	}
	for _, n := range r.ops[i+1:] {
		if !n.discarded && n.in.Name == o.in.Name && n.in.Client == o.in.Client && (n.in.Kind == Acquire || n.in.Kind == TryAcquire) &&
			n.returned && !n.out.Unknown && !n.out.Local && n.call >= from {
			return n.ret, true
		}
	}
	return 0, false
}
