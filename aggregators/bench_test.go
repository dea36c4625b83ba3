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

// BenchmarkNoiseDenseMF: 64 rounds from the middle (rounds 1,184 to 1,247)
// of a dense 2,400-round C⁻¹ (optimal or multi-epoch MF over the batch-500,
// 20-epoch MNIST run) at the CNN's 59,802 parameters, the latents already
// drawn: "one-round" is the loop that reads every latent once per round,
// "batched" the Store source's linearBatch-round passes. ns/op is per 64
// rounds; the rounds' arithmetic is the same in both.
func BenchmarkNoiseDenseMF(b *testing.B) {
	const n, d, from, rounds = 2400, 59_802, 1184, 64
	w := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			w.Set(i, j, 1/float64(i-j+1))
		}
	}
	for _, batched := range []bool{false, true} {
		name := "one-round"
		if batched {
			name = "batched"
		}
		b.Run(name, func(b *testing.B) {
			s := NewLinear(w, "noise", rng.New(1), d, Store)
			if !batched {
				s.batch = 1
			}
			dst := make([]float64, d)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if err := s.Seek(from); err != nil {
					b.Fatal(err)
				}
				for j := 0; j < from+rounds; j++ {
					s.latent(j)
				}
				b.StartTimer()
				for t := from; t < from+rounds; t++ {
					if err := s.Next(dst, t); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
