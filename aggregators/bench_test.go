package aggregators

import (
	"fmt"
	"testing"

	"gonum.org/v1/gonum/mat"

	"dpfl/aggregators/strategy"
	"dpfl/sim/rng"
)

// Per-round noise generation at d = 1,000,000 over an n = 2048-round
// mechanism: each benchmark op is one round (rounds cycle through the run;
// the source is rebuilt, outside the timer, when it reaches the end).
const benchD, benchN = 1_000_000, 2048

func benchSource(b *testing.B, mk func() NoiseSource) {
	dst := make([]float64, benchD)
	src := mk()
	t := 0
	// Warm up a full band/level so the steady state is measured.
	for ; t < 128; t++ {
		src.Next(dst, t)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if t == benchN {
			b.StopTimer()
			src, t = mk(), 0
			b.StartTimer()
		}
		if err := src.Next(dst, t); err != nil {
			b.Fatal(err)
		}
		t++
	}
	b.ReportMetric(float64(src.Bytes())/(1<<20), "MB-held")
}

func BenchmarkNoiseIdentity(b *testing.B) {
	benchSource(b, func() NoiseSource { return NewIdentityNoise(rng.New(1)) })
}

// bandedFactor is a synthetic 64-band lower-triangular factor (the cost of
// the recurrence does not depend on the values).
func bandedFactor(n, bands int) *mat.TriDense {
	c := mat.NewTriDense(n, mat.Lower, nil)
	for i := 0; i < n; i++ {
		c.SetTri(i, i, 1)
		for j := max(0, i-bands+1); j < i; j++ {
			c.SetTri(i, j, 0.5/float64(i-j+1))
		}
	}
	return c
}

func BenchmarkNoiseBandMF64(b *testing.B) {
	c := bandedFactor(benchN, 64)
	benchSource(b, func() NoiseSource {
		s, err := NewBanded(c, 64, rng.New(1), benchD)
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}

func benchTree(b *testing.B, est strategy.TreeEstimator, mode Mode) {
	w, err := NoiseWeights(strategy.NewTree(benchN, est))
	if err != nil {
		b.Fatal(err)
	}
	benchSource(b, func() NoiseSource { return NewLinear(w, "noise/tree-node", rng.New(1), benchD, mode) })
}

func BenchmarkNoiseTreeVanillaStore(b *testing.B) { benchTree(b, strategy.TreeVanilla, Store) }
func BenchmarkNoiseTreeVanillaRegenerate(b *testing.B) {
	benchTree(b, strategy.TreeVanilla, Regenerate)
}

// BenchmarkNoiseBLT4 is a BLT with 4 buffers (O(4·d) per round).
func BenchmarkNoiseBLT4(b *testing.B) {
	benchSource(b, func() NoiseSource {
		s, err := NewBLTNoise([]float64{0.99, 0.9, 0.6, 0.2}, []float64{0.1, 0.15, 0.15, 0.1}, benchN, rng.New(1), benchD)
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}

// BenchmarkClippedSumAdd: one client's update clipped and added to the
// exact sum (ClippedSum.Add), at a size that fits in L2 and at the
// benchmark transformer's 657,388 parameters; ns/coord is per coordinate.
func BenchmarkClippedSumAdd(b *testing.B) {
	for _, d := range []int{16_384, 657_388} {
		b.Run(fmt.Sprintf("d=%d", d), func(b *testing.B) {
			deltas := randomDeltas(4, d, 1)[:3]
			work := make([]float32, d)
			s := NewClippedSum(d, 1)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				copy(work, deltas[i%3])
				s.Add(work)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(d), "ns/coord")
		})
	}
}
