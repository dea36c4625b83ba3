package aggregators

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
)

// splitSum adds the deltas in the order perm into parts partial sums (a
// delta to a random part) and merges the parts in a random order.
func splitSum(deltas [][]float32, d int, clip float64, r *rand.Rand) *ClippedSum {
	parts := make([]*ClippedSum, 1+r.IntN(5))
	for i := range parts {
		parts[i] = NewClippedSum(d, clip)
	}
	for _, i := range r.Perm(len(deltas)) {
		parts[r.IntN(len(parts))].Add(slices.Clone(deltas[i]))
	}
	total := NewClippedSum(d, clip)
	for _, i := range r.Perm(len(parts)) {
		if err := total.Merge(parts[i]); err != nil {
			panic(err)
		}
	}
	return total
}

// TestClippedSumOrderFree: any permutation of the contributions, split at
// random into partial sums merged in any order, gives the in-order sum bit
// for bit (vector, words and report), for clip norms across the float64
// range; the words of two sums added as 128-bit integers are their merge.
// Negative control: float64 summation of the same clipped contributions in
// those orders does change bits.
func TestClippedSumOrderFree(t *testing.T) {
	const n, d = 40, 64
	r := rand.New(rand.NewPCG(11, 12))
	floatDiffers := false
	for _, clip := range []float64{1, 0.1, 3e-7, 2.5e5, 1e-300, 1e300} {
		deltas := randomDeltas(n, d, 5)
		for _, v := range deltas {
			for j := range v {
				v[j] *= float32(min(clip, 1e30))
			}
		}
		want := NewClippedSum(d, clip)
		clipped := make([][]float32, n)
		for i, v := range deltas {
			clipped[i] = slices.Clone(v)
			want.Add(clipped[i])
		}
		for trial := 0; trial < 30; trial++ {
			got := splitSum(deltas, d, clip, r)
			if !slices.Equal(got.Vector(), want.Vector()) || !slices.Equal(got.Words(), want.Words()) || got.Report() != want.Report() {
				t.Fatalf("clip %g, trial %d: a split sum differs from the in-order sum", clip, trial)
			}
			// Float64 summation of the same clipped updates in this order.
			a, b := make([]float64, d), make([]float64, d)
			perm := r.Perm(n)
			for k := range n {
				for j := range d {
					a[j] += float64(clipped[k][j])
					b[j] += float64(clipped[perm[k]][j])
				}
			}
			floatDiffers = floatDiffers || !slices.Equal(a, b)
		}
	}
	if !floatDiffers {
		t.Error("negative control: float64 sums in shuffled orders never differed")
	}
}

// TestClippedSumWords: SetWords of the element-wise 128-bit sum of two
// sums' words is their Merge; malformed words are refused.
func TestClippedSumWords(t *testing.T) {
	const n, d = 12, 20
	deltas := randomDeltas(n, d, 9)
	a, b, whole := NewClippedSum(d, 0.5), NewClippedSum(d, 0.5), NewClippedSum(d, 0.5)
	for i, v := range deltas {
		whole.Add(slices.Clone(v))
		if i%3 == 0 {
			a.Add(slices.Clone(v))
		} else {
			b.Add(slices.Clone(v))
		}
	}
	wa, wb := a.Words(), b.Words()
	for i := 0; i < len(wa); i += 2 {
		x := wide{lo: wa[i], hi: int64(wa[i+1])}
		x.add(wide{lo: wb[i], hi: int64(wb[i+1])})
		wa[i], wa[i+1] = x.lo, uint64(x.hi)
	}
	got := NewClippedSum(d, 0.5)
	if err := got.SetWords(wa); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Vector(), whole.Vector()) || got.Report() != whole.Report() {
		t.Fatal("the summed words differ from the merged sum")
	}
	if err := got.SetWords(wa[1:]); err == nil {
		t.Error("words of the wrong length accepted")
	}
	wa[len(wa)-9] = 1 // clients' hi word
	if err := got.SetWords(wa); err == nil {
		t.Error("a count beyond 2⁶⁴ accepted")
	}
}

// exactSum returns Σ_k float64(v_k[j]) for each j, exactly (math/big),
// rounded once to float64.
func exactSum(vs [][]float32, d int) []float64 {
	out := make([]float64, d)
	for j := range out {
		acc := new(big.Float).SetPrec(2000)
		for _, v := range vs {
			acc.Add(acc, new(big.Float).SetFloat64(float64(v[j])))
		}
		out[j], _ = acc.Float64()
	}
	return out
}

// TestQuantizationBelowNoise: the fixed-point sum's error against the exact
// sum of the clipped updates (math/big) stays below its bound
// n·C·2⁻⁶² per coordinate plus the final float64 rounding, and the bound
// is negligible next to the noise std σ·C: 3.1e-16 of it for the
// quickstart (1,000 clients, C = 1, σ ≈ 0.7; asserted below 1e-12) and
// 2.2e-7 of it for a tiny-noise configuration (σ = 1e-9, asserted below
// 1e-6) with a clip norm that is not a power of two. Negative control: a coarse grid (units of C·2⁻¹⁰) exceeds the
// tiny-noise tolerance.
func TestQuantizationBelowNoise(t *testing.T) {
	for _, c := range []struct {
		name        string
		n, d        int
		clip, sigma float64
		maxRatio    float64
	}{
		{"quickstart", 1000, 100, 1, 0.7, 1e-12},
		{"tiny noise", 1000, 100, 0.37, 1e-9, 1e-6},
	} {
		deltas := randomDeltas(c.n+1, c.d, 3)[:c.n] // all finite
		sum := NewClippedSum(c.d, c.clip)
		clipped := make([][]float32, c.n)
		for i, v := range deltas {
			sum.Add(v)
			clipped[i] = slices.Clone(v)
			ClipL2(clipped[i], c.clip) // what Add added
		}
		want := exactSum(clipped, c.d)
		var worst float64
		for j, w := range want {
			err := math.Abs(sum.Vector()[j] - w)
			bound := float64(c.n)*c.clip*0x1p-62 + math.Abs(w)*0x1p-53
			if err > bound {
				t.Fatalf("%s: coordinate %d: error %g above the bound %g", c.name, j, err, bound)
			}
			worst = max(worst, err)
		}
		ratio := worst / (c.sigma * c.clip)
		boundRatio := float64(c.n) * 0x1p-62 / c.sigma // the quantization bound n·C·2⁻⁶² over σ·C
		t.Logf("%s: largest error %.3g (%.3g of the noise std); bound %.3g of the noise std", c.name, worst, ratio, boundRatio)
		if ratio > c.maxRatio || boundRatio > c.maxRatio {
			t.Errorf("%s: error %.3g, bound %.3g of the noise std, want below %g", c.name, ratio, boundRatio, c.maxRatio)
		}
		if c.sigma < 1e-6 {
			// Negative control: rounding each update to C·2⁻¹⁰ is visible.
			var coarse float64
			for j := range c.d {
				var s float64
				for _, v := range clipped {
					s += math.RoundToEven(float64(v[j])/c.clip*1024) * c.clip / 1024
				}
				coarse = max(coarse, math.Abs(s-want[j]))
			}
			if coarse/(c.sigma*c.clip) <= c.maxRatio {
				t.Errorf("negative control: a coarse grid's error %.3g of the noise std passed", coarse/(c.sigma*c.clip))
			}
		}
	}
}

// TestExactSum: Exact sums are order-free (random splits merge to the same
// bits, non-finite terms give NaN), round to the unit, saturate instead of
// wrapping, and refuse to merge sums of other units.
func TestExactSum(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	xs := make([]float64, 500)
	for i := range xs {
		xs[i] = math.Exp(4*r.NormFloat64()) * float64(1-2*r.IntN(2))
	}
	want := NewExact(lossExp)
	for _, x := range xs {
		want.Add(x)
	}
	for trial := 0; trial < 20; trial++ {
		a, b := NewExact(lossExp), NewExact(lossExp)
		for _, i := range r.Perm(len(xs)) {
			if r.IntN(2) == 0 {
				a.Add(xs[i])
			} else {
				b.Add(xs[i])
			}
		}
		if err := b.Merge(a); err != nil {
			t.Fatal(err)
		}
		if b.Float64() != want.Float64() || b.Words() != want.Words() {
			t.Fatalf("trial %d: %v, want %v", trial, b.Float64(), want.Float64())
		}
	}
	e := NewExact(-2)
	e.Add(0.3) // 0.25
	e.Add(0.4) // 0.5
	if e.Float64() != 0.75 {
		t.Errorf("units of 1/4: %v, want 0.75", e.Float64())
	}
	big := NewExact(lossExp)
	big.Add(1e300)
	big.Add(1e300)
	if got := big.Float64(); got != 2*0x1p35 {
		t.Errorf("saturated sum %v, want %v", got, 2*0x1p35)
	}
	e.Add(math.NaN())
	if !math.IsNaN(e.Float64()) {
		t.Error("a NaN term did not make the sum NaN")
	}
	if err := e.Merge(NewExact(lossExp)); err == nil {
		t.Error("merged sums of different units")
	}
	var zero Exact
	if err := zero.Merge(want); err != nil || zero.Float64() != want.Float64() {
		t.Errorf("the zero value is not an empty loss sum: %v", err)
	}
}
