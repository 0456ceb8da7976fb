package lincheck

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// stalledHistory builds the shape a stall leaves behind, from a true
// sequence of events: k clients' acquires of one name fail early and take
// no effect, while clients a, b and c hand the name around (a grant at 10
// and a release at 60 in every 100 time units) for handoffs rounds, and
// three readers read it every 15 units. Each operation spans its true
// moment by up to slack either side, so operations overlap as concurrent
// calls do. With settled, each failed acquire's settlement is seen to
// commit up to 100 units after the acquire failed; without, the
// settlements stay open to the end, as the tests recorded them before the
// nodes' settle hook.
func stalledHistory(seed uint64, k, dark, handoffs int, slack int64, settled bool) []porcupine.Operation {
	rng := rand.New(rand.NewPCG(seed, 1))
	end := int64(handoffs*100 + 100)
	var ops []porcupine.Operation
	span := func(w int, at int64, in Input, out Output) {
		in.Name, in.ID = "n", len(ops)+1
		ops = append(ops, porcupine.Operation{ClientId: w, Input: in, Output: out,
			Call: at - rng.Int64N(slack+1), Return: at + 1 + rng.Int64N(slack+1)})
	}
	for i := range handoffs {
		client := []string{"a", "b", "c"}[i%3]
		token := uint64(i + 1)
		span(i%3, int64(100*i+10), Input{Kind: Acquire, Client: client}, Output{Token: token})
		span(i%3, int64(100*i+60), Input{Kind: Release, Client: client, Token: token}, Output{})
		for r := range 3 {
			if i < dark {
				break // the readers' Syncs fail: no read is recorded
			}
			for at := int64(100*i + 5*r); at < int64(100*(i+1)); at += 15 {
				out := Output{}
				if at > int64(100*i+10) && at < int64(100*i+60) {
					out.Holders = []Holder{{client, token}}
				}
				if at != int64(100*i+10) && at != int64(100*i+60) {
					span(3+r, at, Input{Kind: Read}, out)
				}
			}
		}
	}
	for j := range k {
		x := fmt.Sprintf("x%d", j)
		call := rng.Int64N(int64(100 * dark))
		failed := call + 50
		a := porcupine.Operation{ClientId: 6 + j, Input: Input{Kind: Acquire, Name: "n", Client: x, ID: len(ops) + 1},
			Output: Output{Unknown: true}, Call: call, Return: end}
		s := porcupine.Operation{ClientId: 6 + j, Input: Input{Kind: Settle, Name: "n", Client: x, Ref: a.Input.(Input).ID},
			Output: Output{Unknown: true}, Call: failed, Return: end}
		if settled {
			at := max(failed, int64(100*dark)) + rng.Int64N(101)
			in := a.Input.(Input)
			in.Settled = true
			a.Input, a.Return = in, at
			s.Output, s.Call, s.Return = Output{}, call, at
		}
		ops = append(ops, a, s)
	}
	return ops
}

// TestStalledHistoryAccepted: the stalled shape is linearizable, with the
// settlements open or seen to commit.
func TestStalledHistoryAccepted(t *testing.T) {
	for _, settled := range []bool{false, true} {
		ops := stalledHistory(1, 3, 5, 20, 8, settled)
		if res, _ := Check(LeaseModel(), ops, time.Minute); res != porcupine.Ok {
			t.Errorf("settled %v: %s", settled, res)
		}
	}
}

// BenchmarkStalledHistory measures the check of the stalled shape with k
// failed acquires over 40 handoffs (20 of them without reads), their
// settlements open or seen to commit, as it is (accepted) and with a stale
// read at the end (rejected, which takes trying every linearization: with
// open settlements, every placement of every failed pair in every later
// moment). Beyond 4 failed acquires the open, rejected row takes hours.
func BenchmarkStalledHistory(b *testing.B) {
	for _, k := range []int{2, 3, 4} {
		for _, settled := range []bool{false, true} {
			for _, bad := range []bool{false, true} {
				b.Run(fmt.Sprintf("failed=%d/settled=%v/rejected=%v", k, settled, bad), func(b *testing.B) {
					ops := stalledHistory(1, k, 20, 40, 8, settled)
					want := porcupine.Ok
					if bad {
						ops = append(ops, staleRead(ops))
						want = porcupine.Illegal
					}
					for b.Loop() {
						if res, _ := Check(LeaseModel(), ops, 10*time.Minute); res != want {
							b.Fatalf("%s", res)
						}
					}
				})
			}
		}
	}
}

// staleRead is a read after every operation of ops that sees the first
// grant again: no linearization has it, and the checker must try them all
// to say so.
func staleRead(ops []porcupine.Operation) porcupine.Operation {
	var last int64
	for _, o := range ops {
		last = max(last, o.Return)
	}
	return porcupine.Operation{ClientId: 99, Input: Input{Kind: Read, Name: "n", ID: len(ops) + 1},
		Output: Output{Holders: []Holder{{"a", 1}}}, Call: last + 1, Return: last + 2}
}
