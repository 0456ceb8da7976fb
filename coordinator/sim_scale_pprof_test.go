package coordinator_test

import (
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// A reader of the few fields of a runtime/pprof CPU profile that
// TestSimulatedScale needs (the sample types, each sample's values and
// string labels, the string table), so that the module does not take
// github.com/google/pprof as a dependency for one opt-in test. The format
// is profile.proto: a gzipped protocol buffer.

// cpuByNode sums a CPU profile's nanoseconds by the "node" label.
func cpuByNode(r io.Reader) (map[string]time.Duration, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	var (
		strs    []string
		types   []int64 // sample types' type string indexes
		samples []pbSample
	)
	err = pbFields(b, func(field int, v uint64, data []byte) error {
		switch field {
		case 1: // sample_type
			return pbFields(data, func(f int, v uint64, _ []byte) error {
				if f == 1 {
					types = append(types, int64(v))
				}
				return nil
			})
		case 2: // sample
			s, err := pbParseSample(data)
			samples = append(samples, s)
			return err
		case 6: // string_table
			strs = append(strs, string(data))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	str := func(i int64) string {
		if i < 0 || int(i) >= len(strs) {
			return ""
		}
		return strs[i]
	}
	vi := -1
	for i, t := range types {
		if str(t) == "cpu" {
			vi = i
		}
	}
	if vi < 0 {
		return nil, errors.New("no cpu sample type in the profile")
	}
	out := map[string]time.Duration{}
	for _, s := range samples {
		if vi >= len(s.values) {
			return nil, errors.New("a sample without its cpu value")
		}
		node := scaleUnlabelled
		for _, l := range s.labels {
			if str(l[0]) == "node" {
				node = str(l[1])
			}
		}
		out[node] += time.Duration(s.values[vi])
	}
	return out, nil
}

// pbSample is a sample's values and its string labels (key, value: string
// table indexes).
type pbSample struct {
	values []int64
	labels [][2]int64
}

func pbParseSample(b []byte) (pbSample, error) {
	var s pbSample
	err := pbFields(b, func(field int, v uint64, data []byte) error {
		switch field {
		case 2: // value: one varint, or packed
			if data == nil {
				s.values = append(s.values, int64(v))
				return nil
			}
			for len(data) > 0 {
				x, n := binary.Uvarint(data)
				if n <= 0 {
					return errors.New("bad packed value")
				}
				s.values = append(s.values, int64(x))
				data = data[n:]
			}
		case 3: // label
			var l [2]int64
			err := pbFields(data, func(f int, v uint64, _ []byte) error {
				if f == 1 || f == 2 {
					l[f-1] = int64(v)
				}
				return nil
			})
			s.labels = append(s.labels, l)
			return err
		}
		return nil
	})
	return s, err
}

// pbFields calls fn with each field of a protocol buffer message: a varint
// field's value, or a length-delimited field's bytes (nil for a varint).
func pbFields(b []byte, fn func(field int, v uint64, data []byte) error) error {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return errors.New("bad field key")
		}
		b = b[n:]
		field, wire := int(key>>3), key&7
		var v uint64
		var data []byte
		switch wire {
		case 0:
			v, n = binary.Uvarint(b)
			if n <= 0 {
				return errors.New("bad varint")
			}
			b = b[n:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return errors.New("bad length")
			}
			data, b = b[n:n+int(l)], b[n+int(l):]
			if data == nil {
				data = []byte{}
			}
		case 1:
			if len(b) < 8 {
				return errors.New("short fixed64")
			}
			b = b[8:]
		case 5:
			if len(b) < 4 {
				return errors.New("short fixed32")
			}
			b = b[4:]
		default:
			return fmt.Errorf("wire type %d", wire)
		}
		if err := fn(field, v, data); err != nil {
			return err
		}
	}
	return nil
}
