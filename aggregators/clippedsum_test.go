package aggregators

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomDeltas returns n deltas of d coordinates with norms spread around
// the clip norm 1, the last one non-finite.
func randomDeltas(n, d int, seed uint64) [][]float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([][]float32, n)
	for i := range out {
		v := make([]float32, d)
		scale := math.Exp(r.NormFloat64()) / math.Sqrt(float64(d))
		for j := range v {
			v[j] = float32(scale * r.NormFloat64())
		}
		out[i] = v
	}
	out[n-1][0] = float32(math.Inf(1))
	return out
}

// TestClippedSumAdd: the sum is Σ clip(Δ_i) computed independently (norms
// and scaling in float64 on copies), within float32 rounding of the
// clipping, and the statistics count clipped, dropped and unclipped updates.
func TestClippedSumAdd(t *testing.T) {
	const n, d, clip = 9, 40, 1.0
	deltas := randomDeltas(n, d, 7)
	want := make([]float64, d)
	var clipped, dropped int
	var norms float64
	for _, v := range deltas {
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		norm := math.Sqrt(s)
		if math.IsInf(norm, 0) || math.IsNaN(norm) {
			dropped++
			continue
		}
		norms += norm
		f := 1.0
		if norm > clip {
			clipped++
			f = clip / norm
		}
		for j, x := range v {
			want[j] += float64(x) * f
		}
	}
	sum := NewClippedSum(d, clip)
	for _, v := range deltas {
		c := slices.Clone(v)
		sum.Add(c)
		if !slices.Equal(c, v) && !slices.ContainsFunc(v, func(x float32) bool { return x != x }) {
			t.Fatal("Add changed its delta")
		}
	}
	for j, w := range want {
		if math.Abs(sum.Vector()[j]-w) > 1e-6*(1+math.Abs(w)) {
			t.Fatalf("coordinate %d: %v, want %v", j, sum.Vector()[j], w)
		}
	}
	rep := sum.Report()
	if rep.Clients != n || rep.Clipped != clipped || rep.Dropped != dropped || sum.Unclipped() != n-clipped-dropped {
		t.Fatalf("report %+v, unclipped %d: want %d clients, %d clipped, %d dropped", rep, sum.Unclipped(), n, clipped, dropped)
	}
	if clipped == 0 || clipped == n-dropped || dropped != 1 {
		t.Fatalf("the test's deltas should be partly clipped and one dropped: %d clipped, %d dropped", clipped, dropped)
	}
	if math.Abs(rep.MeanNorm-norms/float64(n-dropped)) > 1e-12 {
		t.Fatalf("mean norm %v, want %v", rep.MeanNorm, norms/float64(n-dropped))
	}
}

// TestClippedSumMerge: two partial sums of the cohort's halves merge into
// the in-order sum bit for bit (vector and statistics); a sum at another
// clip norm or length does not merge.
func TestClippedSumMerge(t *testing.T) {
	const n, d = 10, 30
	deltas := randomDeltas(n, d, 3)
	whole, a, b := NewClippedSum(d, 1), NewClippedSum(d, 1), NewClippedSum(d, 1)
	for i, v := range deltas {
		whole.Add(slices.Clone(v))
		if i < n/2 {
			a.Add(slices.Clone(v))
		} else {
			b.Add(slices.Clone(v))
		}
	}
	if err := a.Merge(b); err != nil {
		t.Fatal(err)
	}
	ra, rw := a.Report(), whole.Report()
	if ra != rw {
		t.Fatalf("merged report %+v, in order %+v", ra, rw)
	}
	if !slices.Equal(a.Vector(), whole.Vector()) || !slices.Equal(a.Words(), whole.Words()) {
		t.Fatal("the merged sum differs from the in-order sum")
	}
	if err := a.Merge(NewClippedSum(d, 2)); err == nil {
		t.Error("merged a sum clipped at another norm")
	}
	if err := a.Merge(NewClippedSum(d+1, 1)); err == nil {
		t.Error("merged a sum of another length")
	}
	a.Reset(0.5)
	if a.Clients() != 0 || a.Clip() != 0.5 || slices.ContainsFunc(a.Vector(), func(x float64) bool { return x != 0 }) {
		t.Errorf("Reset left %d clients, clip %v", a.Clients(), a.Clip())
	}
}
