package walog

import (
	"testing"

	"github.com/hashicorp/raft"
)

// BenchmarkStoreLogs appends one 100-byte entry per call, each synced (a
// raft commit on one voter), on the test's temporary directory.
func BenchmarkStoreLogs(b *testing.B) {
	l, err := Open(b.TempDir(), Options{SegmentSize: 8 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	data := make([]byte, 100)
	b.ResetTimer()
	for i := range b.N {
		if err := l.StoreLogs([]*raft.Log{{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: data}}); err != nil {
			b.Fatal(err)
		}
	}
}
