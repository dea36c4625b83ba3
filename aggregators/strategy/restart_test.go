package strategy

import (
	"context"
	"math"
	"math/bits"
	"testing"

	"gonum.org/v1/gonum/mat"

	"dpfl/participation"
)

// TestTreeRestartsStructure: for every estimator, the prefix weights decode
// prefix sums from the block-diagonal C (W C = S), B C = A for a momentum
// workload, C is block-diagonal (no node spans two blocks) and restarting
// every n rounds or more is the plain tree.
func TestTreeRestartsStructure(t *testing.T) {
	const n = 23
	for _, est := range []TreeEstimator{TreeVanilla, TreeOnline, TreeFull} {
		for _, every := range []int{1, 4, 7, 8} {
			s := NewTreeRestarts(n, every, est)
			w, err := s.PrefixWeights()
			if err != nil {
				t.Fatal(err)
			}
			var ws mat.Dense
			ws.Mul(w, s.Encoder())
			ws.Sub(&ws, Prefix(n).A())
			if r := mat.Norm(&ws, math.Inf(1)); r > 1e-12 {
				t.Fatalf("%s every %d: ‖W C − S‖∞ = %g", s.String(), every, r)
			}
			wl := Momentum(n, 0.9, LinearCooldown(n, 5, 0.1))
			m, err := Evaluate(s, wl, participation.AtMostOnce)
			if err != nil {
				t.Fatal(err)
			}
			if m.Residual > 1e-12 {
				t.Fatalf("%s every %d: residual %g", s.String(), every, m.Residual)
			}
			for _, nd := range s.Nodes() {
				if nd.Start/every != (nd.Start+nd.Len-1)/every {
					t.Fatalf("%s every %d: node %+v spans two blocks", s.String(), every, nd)
				}
			}
		}
		one, plain := NewTreeRestarts(n, n+3, est), NewTree(n, est)
		if !mat.Equal(one.Gram(), plain.Gram()) {
			t.Fatalf("%v: restarting after the end changed the tree", est)
		}
	}
}

// TestTreeRestartsSensitivityBruteForce: the sensitivity under every schema
// equals the brute-force maximum over all patterns of ‖C 1_π‖² on the
// materialized block-diagonal Gram matrix (C ≥ 0, so that is exact), for
// small n; the generic Thm 3 bound is never below it.
func TestTreeRestartsSensitivityBruteForce(t *testing.T) {
	for _, n := range []int{9, 13, 16} {
		for _, every := range []int{2, 3, 4, 5, 8} {
			s := NewTreeRestarts(n, every, TreeVanilla)
			x := s.Gram()
			ps := []participation.Pattern{participation.AtMostOnce}
			for k := 1; k <= 4; k++ {
				for b := 1; b <= 6; b++ {
					ps = append(ps, participation.Spaced(k, b), participation.Turns(k, b))
				}
			}
			for _, p := range ps {
				if p.Groups > 0 && (n+p.Separation()-1)/p.Separation() > p.MaxParticipations {
					continue
				}
				got, err := s.Sensitivity(p)
				if err != nil {
					t.Fatal(err)
				}
				want := bruteSens2(x, p)
				if math.Abs(got.Value*got.Value-want) > 1e-9 || !got.Exact {
					t.Fatalf("n %d every %d %v: sens² %v (%s), brute force %v", n, every, p, got.Value*got.Value, got.Method, want)
				}
				if p.MinSeparation > 0 {
					bound, _ := SensitivityOf(x, p)
					if bound.Value < got.Value-1e-9 {
						t.Fatalf("n %d every %d %v: generic bound %v below exact %v", n, every, p, bound.Value, got.Value)
					}
				}
			}
		}
	}
}

// TestTreeRestartsEpochClosedForm: restarting every b rounds under (k,b) or
// b-min-sep, a client takes part at most once per tree, so sens² is k times
// the per-tree sensitivity: k·(log₂ b + 1) for b a power of two, here at
// n = 2048 (k = 8, b = 256) by the DP and by the generic (k,b) formula on
// the materialized Gram matrix. Without restarts the tree's sensitivity is
// larger (the participations share upper nodes).
func TestTreeRestartsEpochClosedForm(t *testing.T) {
	const n, k, b = 2048, 8, 256
	s := NewTreeRestarts(n, b, TreeOnline)
	want := float64(k * bits.Len(b))
	for _, p := range []participation.Pattern{participation.Spaced(k, b), participation.Turns(k, b)} {
		got, err := s.Sensitivity(p)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got.Value*got.Value-want) > 1e-9 {
			t.Fatalf("%v: sens² %v (%s), want k·levels = %v", p, got.Value*got.Value, got.Method, want)
		}
	}
	one, err := NewTree(n, TreeOnline).Sensitivity(participation.Turns(k, b))
	if err != nil || !(one.Value*one.Value > want) {
		t.Fatalf("one tree: sens² %v (%v), restarted %v", one.Value*one.Value, err, want)
	}
}

// TestTreeSegments: restarts on an irregular schedule (a list of segment
// lengths, as dp_accounting's tree events take). The block-diagonal
// structure decodes prefix sums exactly, no node spans two segments, equal
// segments are NewTreeRestarts, and the sensitivity under every schema is
// the brute-force maximum over patterns on the Gram matrix; under single
// participation it is the levels of the longest segment's tree,
// ⌈log₂(len+1)⌉ — dp_accounting's depth for a single-epoch tree event.
func TestTreeSegments(t *testing.T) {
	for _, segs := range [][]int{{5, 1, 7}, {3, 3, 3, 2}, {1, 1, 1, 1}, {13}, {2, 9, 4}} {
		for _, est := range []TreeEstimator{TreeVanilla, TreeOnline, TreeFull} {
			s := NewTreeSegments(segs, est)
			n := s.N()
			w, err := s.PrefixWeights()
			if err != nil {
				t.Fatal(err)
			}
			var ws mat.Dense
			ws.Mul(w, s.Encoder())
			ws.Sub(&ws, Prefix(n).A())
			if r := mat.Norm(&ws, math.Inf(1)); r > 1e-12 {
				t.Fatalf("%v %s: ‖W C − S‖∞ = %g", segs, s.String(), r)
			}
			start := 0
			var bounds []int
			for _, l := range segs {
				bounds = append(bounds, start)
				start += l
			}
			block := func(r int) int {
				b := 0
				for i, st := range bounds {
					if r >= st {
						b = i
					}
				}
				return b
			}
			for _, nd := range s.Nodes() {
				if block(nd.Start) != block(nd.Start+nd.Len-1) {
					t.Fatalf("%v: node %+v spans two segments", segs, nd)
				}
			}
			if got := s.Segments(); len(got) != len(segs) || s.Every() != 0 {
				t.Fatalf("%v: Segments %v, Every %d", segs, got, s.Every())
			}
		}
		s := NewTreeSegments(segs, TreeVanilla)
		x := s.Gram()
		longest := 0
		for _, l := range segs {
			longest = max(longest, l)
		}
		single, err := s.Sensitivity(participation.AtMostOnce)
		if err != nil || math.Abs(single.Value*single.Value-float64(bits.Len(uint(longest)))) > 1e-12 || math.Abs(single.Value*single.Value-bruteSens2(x, participation.AtMostOnce)) > 1e-9 {
			t.Fatalf("%v single: sens² %v, levels of %d = %d, brute force %v", segs, single.Value*single.Value, longest, bits.Len(uint(longest)), bruteSens2(x, participation.AtMostOnce))
		}
		for k := 1; k <= 3; k++ {
			for b := 1; b <= 5; b++ {
				for _, p := range []participation.Pattern{participation.Spaced(k, b), participation.Turns(k, b)} {
					if p.Groups > 0 && (s.N()+p.Separation()-1)/p.Separation() > p.MaxParticipations {
						continue
					}
					got, err := s.Sensitivity(p)
					if err != nil {
						t.Fatal(err)
					}
					if want := bruteSens2(x, p); math.Abs(got.Value*got.Value-want) > 1e-9 {
						t.Fatalf("%v %v: sens² %v, brute force %v", segs, p, got.Value*got.Value, want)
					}
				}
			}
		}
	}
	// Equal segments are the periodic restart.
	a, b := NewTreeSegments([]int{4, 4, 4, 3}, TreeOnline), NewTreeRestarts(15, 4, TreeOnline)
	if !mat.Equal(a.Gram(), b.Gram()) || !mat.Equal(a.Encoder(), b.Encoder()) {
		t.Fatal("segments 4,4,4,3 differ from restarting every 4 of 15 rounds")
	}
	// Build checks the schedule against the rounds.
	if _, err := Build(context.Background(), "tree", Config{Workload: Prefix(10), RestartSegments: []int{4, 5}}); err == nil {
		t.Error("segments summing to 9 accepted for 10 rounds")
	}
	if s, err := Build(context.Background(), "tree-online", Config{Workload: Prefix(10), RestartSegments: []int{4, 6}}); err != nil || s.(*TreeRestarts).Segments()[1] != 6 {
		t.Errorf("Build with segments: %v, %v", s, err)
	}
}
