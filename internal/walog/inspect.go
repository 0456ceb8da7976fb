package walog

// SegmentInfo describes one segment file, for an offline check.
type SegmentInfo struct {
	Name string
	Seq  uint64
	// Format is 1 (written before segment headers) or 2.
	Format int
	// First and Last are its entries' indexes (Last = First-1 when it
	// holds none); FirstTerm and LastTerm their terms.
	First, Last         uint64
	FirstTerm, LastTerm uint64
	// Bytes is the end of its last record; Size the file's size
	// (preallocated space included).
	Bytes, Size int64
}

// Segments lists the segments of the log, in order.
func (l *Log) Segments() []SegmentInfo {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]SegmentInfo, 0, len(l.segs))
	for _, s := range l.segs {
		info := SegmentInfo{Name: s.name(), Seq: s.seq, Format: s.format, First: s.base, Last: s.lastIndex(), Bytes: s.size, Size: s.alloc}
		if len(s.offs) > 0 {
			info.FirstTerm = l.termAt(s, 0)
			info.LastTerm = l.termAt(s, len(s.offs)-1)
		}
		out = append(out, info)
	}
	return out
}

// termAt is the term of s's k-th record (0 if it cannot be read). Called
// with mu held.
func (l *Log) termAt(s *segment, k int) uint64 {
	end := s.size
	if k+1 < len(s.offs) {
		end = s.offs[k+1]
	}
	payload, _, err := readRecord(s.f, s.offs[k], end, nil)
	if err != nil {
		return 0
	}
	m, err := decodeMeta(payload, s.format)
	if err != nil {
		return 0
	}
	return m.term
}
