package strategy

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"dpfl/participation"
)

// TestTreeCompletionPaperExample is Kairouz et al. 2021 App. D.3.1's
// example: rounds [1, 2, 3, 1, 4] (client 1 in rounds 0 and 3) completed
// with 3 virtual rounds to a tree of 8 leaves: client 1 has sensitivity
// √12, clients 2, 3 and 4 have 2. The forest of 5 rounds (no completion)
// gives client 1 √8 and round 4 (a lone leaf) 1.
func TestTreeCompletionPaperExample(t *testing.T) {
	sens2 := func(x mat.Symmetric, rounds ...int) float64 {
		var s float64
		for _, i := range rounds {
			for _, j := range rounds {
				s += x.At(i, j)
			}
		}
		return s
	}
	c := NewTree(5, TreeVanilla).Completed().Gram()
	if got := sens2(c, 0, 3); got != 12 {
		t.Errorf("completed: client 1's sens² %v, want 12", got)
	}
	for _, r := range []int{1, 2, 4} {
		if got := sens2(c, r); got != 4 {
			t.Errorf("completed: round %d's sens² %v, want 4", r, got)
		}
	}
	f := NewTree(5, TreeVanilla).Gram()
	if got, got4 := sens2(f, 0, 3), sens2(f, 4); got != 8 || got4 != 1 {
		t.Errorf("forest: client 1's sens² %v (want 8), round 4's %v (want 1)", got, got4)
	}
}

// lastVariance is the variance, in node-noise units, of the estimate of the
// sum of all rounds (W's last row).
func lastVariance(t *testing.T, s PrefixWeighted) float64 {
	t.Helper()
	w, err := s.PrefixWeights()
	if err != nil {
		t.Fatal(err)
	}
	r, _ := w.Dims()
	var v float64
	for _, x := range w.RawRowView(r - 1) {
		v += x * x
	}
	return v
}

// TestTreeCompletionLastNoise checks the variance of the last prefix sum
// against Kairouz et al. 2021 App. D.3.1's figures for a tree of 25 leaves
// completed to 32: 3 nodes' noise to 1 with the vanilla estimator, and
// about 2.05 to 0.51 with Honaker's. Our completed online estimator reads
// the last sum by least squares, which also uses that the virtual rounds
// are zero, so it is at most Honaker's 1/(2 − 2⁻⁵) on the full tree of 32.
// The other prefix sums keep their weights, and W·T = S (unbiased) holds
// for every estimator.
func TestTreeCompletionLastNoise(t *testing.T) {
	if v := lastVariance(t, NewTree(25, TreeVanilla)); v != 3 {
		t.Errorf("vanilla, 25 leaves: last variance %v, want 3", v)
	}
	if v := lastVariance(t, NewTree(25, TreeVanilla).Completed()); v != 1 {
		t.Errorf("vanilla, completed: last variance %v, want 1", v)
	}
	if v := lastVariance(t, NewTree(25, TreeOnline)); math.Abs(v-2.05) > 0.005 {
		t.Errorf("online, 25 leaves: last variance %v, the paper's ≈ 2.05", v)
	}
	honaker32 := 1 / (2 - 1.0/32)
	if v := lastVariance(t, NewTree(25, TreeOnline).Completed()); v > honaker32+1e-12 || v < 1.0/6 {
		t.Errorf("online, completed: last variance %v, want at most Honaker's %v on 32 leaves (the paper's ≈ 0.51)", v, honaker32)
	}
	for _, est := range []TreeEstimator{TreeVanilla, TreeOnline, TreeFull} {
		for _, n := range []int{1, 5, 8, 25, 33} {
			plain, done := NewTree(n, est), NewTree(n, est).Completed()
			wp, err := plain.PrefixWeights()
			if err != nil {
				t.Fatal(err)
			}
			wc, err := done.PrefixWeights()
			if err != nil {
				t.Fatal(err)
			}
			var ws mat.Dense
			ws.Mul(wc, done.Encoder())
			if !mat.EqualApprox(&ws, Prefix(n).A(), 1e-9) {
				t.Errorf("%v n=%d: W·T is not the prefix-sum matrix", done, n)
			}
			if est == TreeFull {
				if lastVariance(t, done) > lastVariance(t, plain)+1e-12 {
					t.Errorf("%v n=%d: completion raised the last variance", done, n)
				}
				continue
			}
			_, mp := wp.Dims()
			for r := 0; r < n-1; r++ {
				for j := 0; j < mp; j++ {
					if wc.At(r, j) != wp.At(r, j) {
						t.Fatalf("%v n=%d: prefix %d's weights changed", done, n, r)
					}
				}
			}
		}
	}
}

// TestTreeCompletionSensitivity: a completed tree's real rounds are in
// ⌈log₂ n⌉+1 nodes each, and its b-min-sep dynamic program (one tree with
// virtual leaves), alone and restarted, equals brute force over the
// participation patterns; (k,b) uses the Gram matrix. For n a power of
// two nothing changes.
func TestTreeCompletionSensitivity(t *testing.T) {
	for _, c := range []struct{ n, levels int }{{1, 1}, {5, 4}, {8, 4}, {25, 6}, {240, 9}, {256, 9}} {
		tr := NewTree(c.n, TreeOnline).Completed()
		s, err := tr.Sensitivity(participation.AtMostOnce)
		if err != nil || math.Abs(s.Value*s.Value-float64(c.levels)) > 1e-12 || !s.Exact {
			t.Errorf("n=%d once: sens² %v (%v), want %d", c.n, s.Value*s.Value, err, c.levels)
		}
	}
	for n := 1; n <= 13; n++ {
		for k := 1; k <= 4; k++ {
			for b := 1; b <= 4; b++ {
				p := participation.Spaced(k, b)
				tr := NewTree(n, TreeVanilla).Completed()
				s, err := tr.Sensitivity(p)
				if want := bruteSens2(tr.Gram(), p); err != nil || math.Abs(s.Value*s.Value-want) > 1e-9 {
					t.Errorf("completed n=%d k=%d b=%d: DP %v (%v), brute force %v", n, k, b, s.Value*s.Value, err, want)
				}
			}
		}
	}
	for _, segs := range [][]int{{3, 5}, {5, 5, 2}, {6, 4, 3}, {4, 4}} {
		for k := 1; k <= 4; k++ {
			for b := 1; b <= 5; b++ {
				p := participation.Spaced(k, b)
				r := NewTreeSegments(segs, TreeOnline).Completed()
				s, err := r.Sensitivity(p)
				if want := bruteSens2(r.Gram(), p); err != nil || math.Abs(s.Value*s.Value-want) > 1e-9 {
					t.Errorf("completed segments %v k=%d b=%d: DP %v (%v), brute force %v", segs, k, b, s.Value*s.Value, err, want)
				}
			}
		}
	}
	if a, b := NewTree(16, TreeOnline), NewTree(16, TreeOnline).Completed(); a.String() != b.String() || lastVariance(t, a) != lastVariance(t, b) {
		t.Errorf("16 leaves: completion changed the tree (%v, %v)", a, b)
	}
}
