package fence

import "github.com/prometheus/client_golang/prometheus"

// RejectionsForTest exposes the rejection counter to the tests.
func (m *Memory) RejectionsForTest() prometheus.Counter { return m.rejections }

// RejectionsForTest exposes the rejection counter to the tests.
func (s *SQL) RejectionsForTest() prometheus.Counter { return s.rejections }
