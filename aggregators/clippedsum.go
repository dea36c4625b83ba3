package aggregators

import (
	"fmt"
	"iter"
	"math"
)

// ClippedSum is one round's sum of clipped client updates together with the
// per-round statistics the mechanisms and the report need. Every sum of
// client contributions goes through it: an executor adds the cohort's
// updates (Add), possibly into several partial sums that are then merged
// (Merge), and a mechanism privatizes the finished sum (Aggregator.Privatize).
//
// Arithmetic: the sum is accumulated in float64, one coordinate at a time,
// in the order the updates are added. Adding the cohort in order on one
// ClippedSum is therefore deterministic; merging partial sums adds them in a
// different order, so a merged sum may differ from the in-order sum by
// float64 rounding (the statistics are exact either way). An order-free
// representation (exact fixed-point integers) can replace the inside of this
// type without changing its callers.
type ClippedSum struct {
	clip float64
	sum  []float64

	clients int     // updates added
	clipped int     // updates whose norm exceeded the clip
	dropped int     // non-finite updates (contribute zero)
	norms   float64 // sum of the pre-clip norms of the finite updates
}

// NewClippedSum returns an empty sum of d coordinates for updates clipped
// to L2 norm clip.
func NewClippedSum(d int, clip float64) *ClippedSum {
	return &ClippedSum{clip: clip, sum: make([]float64, d)}
}

// Reset empties the sum for a round at clip norm clip.
func (s *ClippedSum) Reset(clip float64) {
	clear(s.sum)
	s.clip, s.clients, s.clipped, s.dropped, s.norms = clip, 0, 0, 0, 0
}

// Clip returns the clip norm the updates are clipped at.
func (s *ClippedSum) Clip() float64 { return s.clip }

// Len returns the number of coordinates.
func (s *ClippedSum) Len() int { return len(s.sum) }

// Vector returns the sum of the clipped updates; it belongs to s and is
// valid until the next Add, Merge or Reset.
func (s *ClippedSum) Vector() []float64 { return s.sum }

// Add clips delta in place to L2 norm Clip and adds it to the sum. A
// non-finite delta is counted as dropped and contributes zero. A delta of
// the wrong length is a programming error and panics.
func (s *ClippedSum) Add(delta []float32) {
	if len(delta) != len(s.sum) {
		panic(fmt.Sprintf("aggregators: delta of length %d for a model of %d parameters", len(delta), len(s.sum)))
	}
	s.clients++
	n := ClipL2(delta, s.clip)
	if math.IsNaN(n) || math.IsInf(n, 0) {
		s.dropped++
		return
	}
	s.norms += n
	if n > s.clip {
		s.clipped++
	}
	for i, x := range delta {
		s.sum[i] += float64(x)
	}
}

// AddAll adds the deltas in order (Add).
func (s *ClippedSum) AddAll(deltas iter.Seq[[]float32]) {
	for v := range deltas {
		s.Add(v)
	}
}

// Merge adds the partial sum o (of other clients, clipped at the same norm)
// into s. See the type's documentation for the rounding of merged sums.
func (s *ClippedSum) Merge(o *ClippedSum) error {
	if len(o.sum) != len(s.sum) || o.clip != s.clip {
		return fmt.Errorf("aggregators: cannot merge a sum of %d coordinates clipped at %v into one of %d clipped at %v", len(o.sum), o.clip, len(s.sum), s.clip)
	}
	for i, x := range o.sum {
		s.sum[i] += x
	}
	s.clients += o.clients
	s.clipped += o.clipped
	s.dropped += o.dropped
	s.norms += o.norms
	return nil
}

// Clients returns the number of updates added (dropped ones included).
func (s *ClippedSum) Clients() int { return s.clients }

// Unclipped returns the number of finite updates whose norm was at most the
// clip norm (adaptive clipping's count).
func (s *ClippedSum) Unclipped() int { return s.clients - s.dropped - s.clipped }

// Report returns the sum's statistics as a round report (no noise yet).
func (s *ClippedSum) Report() Report {
	rep := Report{Clients: s.clients, Clipped: s.clipped, Dropped: s.dropped}
	if finite := s.clients - s.dropped; finite > 0 {
		rep.MeanNorm = s.norms / float64(finite)
	}
	return rep
}
