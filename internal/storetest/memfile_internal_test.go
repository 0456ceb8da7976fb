package storetest

import (
	"bytes"
	"math/rand/v2"
	"os"
	"testing"
)

// TestSyncMakesTheFileDurable: after a Sync, the durable copy a crash
// starts from is the file as written, whatever mix of writes (in place,
// past the end, leaving a hole), truncations and allocations came before.
// Sync brings the durable copy up by the changes since the last sync, so
// a change the record of changes missed would show here.
func TestSyncMakesTheFileDurable(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 7))
		m := NewMemFS(0)
		f, err := m.OpenFile("/f", os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		mf := f.(*memFile)
		for step := range 200 {
			size := int64(len(mf.ino.cur))
			switch rng.IntN(5) {
			case 0, 1:
				p := make([]byte, rng.IntN(1500))
				for i := range p {
					p[i] = byte(rng.IntN(256))
				}
				_, err = f.WriteAt(p, rng.Int64N(size+700))
			case 2:
				err = f.Truncate(rng.Int64N(size + 1000))
			case 3:
				err = mf.Allocate(rng.Int64N(size+500), rng.Int64N(2000))
			case 4:
				err = f.Sync()
				if !bytes.Equal(mf.ino.durable, mf.ino.cur) {
					t.Fatalf("seed %d step %d: after Sync the durable copy (%d bytes) differs from the file (%d bytes)",
						seed, step, len(mf.ino.durable), len(mf.ino.cur))
				}
			}
			if err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
		}
	}
}
