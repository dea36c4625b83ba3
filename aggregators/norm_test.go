package aggregators

import (
	"math"
	"math/rand/v2"
	"testing"
)

// laneSumRef is laneSumSquares written out (32 lanes in order, then the
// pairwise tree), without the assembly.
func laneSumRef(x []float32) float64 {
	var l [32]float64
	for i, v := range x {
		l[i%32] += float64(v) * float64(v)
	}
	for w := 16; w >= 1; w /= 2 {
		for j := 0; j < w; j++ {
			l[j] += l[j+w]
		}
	}
	return l[0]
}

// TestClipFactor: clipFactor decides clipping and the factor exactly as
// ClipL2 does (the in-order norm), on random updates of several lengths and
// norms and on adversarial clip norms: equal or adjacent to the in-order
// norm, and putting clip/norm next to a float32 rounding boundary, where
// the lane sum's interval cannot decide and the in-order norm is computed
// (counted: such cases must occur). laneSumSquares gives the written-out
// lane sum's bits. Negative controls: the lane sum's own factor, used
// directly, differs from ClipL2's on some adversarial case, and the lane
// sum differs from the in-order sum on some updates.
func TestClipFactor(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var undecided, laneWrong, sumsDiffer, cases int
	check := func(x []float32, clip float64) {
		cases++
		n := norm2(x)
		wantClipped, wantF := n > clip, float32(1)
		if wantClipped {
			wantF = float32(clip / n)
		}
		f, clipped, norm := clipFactor(x, clip)
		if clipped != wantClipped || math.Float32bits(f) != math.Float32bits(wantF) {
			t.Fatalf("len %d, clip %v, in-order norm %v: clipFactor (%v, %v), ClipL2 (%v, %v)", len(x), clip, n, clipped, f, wantClipped, wantF)
		}
		if s := laneSumRef(x); math.Float64bits(norm) != math.Float64bits(math.Sqrt(s)) {
			t.Fatalf("len %d: lane norm %v, written-out lanes give %v", len(x), norm, math.Sqrt(s))
		}
		if _, _, _, ok := clipFactorLanes(x, clip); !ok {
			undecided++
		}
		if direct := float32(clip / norm); wantClipped && direct != wantF {
			laneWrong++
		}
	}
	for _, d := range []int{1, 31, 32, 33, 100, 1000, 4099, 100_003} {
		for range 20 {
			x := make([]float32, d)
			scale := math.Exp(2*r.NormFloat64()) / math.Sqrt(float64(d))
			for i := range x {
				x[i] = float32(scale * r.NormFloat64())
			}
			n := norm2(x)
			if math.Float64bits(laneSumRef(x)) != math.Float64bits(n*n) && math.Float64bits(math.Sqrt(laneSumRef(x))) != math.Float64bits(n) {
				sumsDiffer++
			}
			check(x, 1)
			check(x, n)
			check(x, math.Nextafter(n, 0))
			check(x, math.Nextafter(n, 2*n))
			for range 5 { // clip/n at a float32 midpoint, and just beside it
				f := float32(0.05 + 0.9*r.Float64())
				mid := (float64(f) + float64(math.Nextafter32(f, 1))) / 2
				c := mid * n
				check(x, c)
				check(x, math.Nextafter(c, 0))
				check(x, math.Nextafter(c, 1e300))
			}
		}
	}
	t.Logf("%d cases: %d undecided by the lane sum's interval, %d where its own factor would be wrong; %d of 160 updates with lane sums other than the in-order sum", cases, undecided, laneWrong, sumsDiffer)
	if undecided == 0 || laneWrong == 0 || sumsDiffer == 0 {
		t.Errorf("the adversarial cases do not reach the in-order fallback (%d), the controls do not fail (%d, %d)", undecided, laneWrong, sumsDiffer)
	}
	// Non-finite coordinates give a non-finite norm either way.
	for _, v := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		x := make([]float32, 70)
		x[69] = v
		if _, _, norm := clipFactor(x, 1); !math.IsNaN(norm) && !math.IsInf(norm, 0) {
			t.Errorf("norm %v with a coordinate %v", norm, v)
		}
	}
}
