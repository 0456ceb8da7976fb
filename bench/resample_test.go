package main

import (
	"math"
	"testing"
)

func TestMedianAboveShare(t *testing.T) {
	low, high := []float64{1, 2, 3}, []float64{10, 11, 12}
	if s := medianAboveShare(high, low, 1000, 1); s != 1 {
		t.Errorf("high over low: share %v, want 1", s)
	}
	if s := medianAboveShare(low, high, 1000, 1); s != 0 {
		t.Errorf("low over high: share %v, want 0", s)
	}
	if s := medianAboveShare(nil, high, 1000, 1); !math.IsNaN(s) {
		t.Errorf("no values: share %v, want NaN", s)
	}
	// Two overlapping samples: neither settled, and the same seed gives the
	// same share.
	a := []float64{5, 7, 9, 11, 13, 15, 17}
	b := []float64{6, 8, 10, 12, 14, 16, 18}
	s1, s2 := medianAboveShare(a, b, 4000, 7), medianAboveShare(a, b, 4000, 7)
	if s1 != s2 {
		t.Errorf("same seed, shares %v and %v", s1, s2)
	}
	if s1 <= 0.05 || s1 >= 0.5 {
		t.Errorf("a slightly below b: share %v, want between 0.05 and 0.5", s1)
	}
}
