package strategy

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"testing"
	"time"
)

func longOnly(b testing.TB, what string) {
	if os.Getenv("DPFL_LONG") != "1" {
		b.Skip(what + " is long; set DPFL_LONG=1 to run it (BandMF n=2052 needs -timeout 30m)")
	}
}

// BenchmarkOptimalPrefix: the fixed point to relative gap 1e-6,
// through the default O(n²) bidiagonal path for prefix sums.
func BenchmarkOptimalPrefix(b *testing.B) {
	for _, n := range []int{256, 1024, 2048} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			if n > 256 {
				longOnly(b, fmt.Sprintf("n=%d", n))
			}
			w := Prefix(n)
			for i := 0; i < b.N; i++ {
				f, err := OptimalSingle(context.Background(), w, FixedPointOptions{Gap: 1e-6})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(f.Status().Iterations), "iters")
			}
		})
	}
}

// BenchmarkOptimalPrefixDense: the same through the dense eigensolver
// (EigenBackend: gonum EigenSym, or dsyevd with -tags lapack).
func BenchmarkOptimalPrefixDense(b *testing.B) {
	for _, n := range []int{256, 1024, 2048} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			if n > 256 {
				longOnly(b, fmt.Sprintf("dense n=%d", n))
			}
			w := Prefix(n)
			for i := 0; i < b.N; i++ {
				f, err := OptimalSingle(context.Background(), w, FixedPointOptions{Gap: 1e-6, Dense: true})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(f.Status().Iterations), "iters")
			}
		})
	}
}

// BenchmarkBandMF: n = 2052, 342 bands (the Choquette-Choo et al. 2023 setting), default
// tolerance; n = 256, 32 bands always.
func BenchmarkBandMF(b *testing.B) {
	for _, c := range []struct{ n, bands int }{{256, 32}, {2052, 342}} {
		b.Run(fmt.Sprintf("n=%d/bands=%d", c.n, c.bands), func(b *testing.B) {
			if c.n > 256 {
				longOnly(b, "BandMF n=2052")
			}
			w := Prefix(c.n)
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				f, err := BandMF(context.Background(), w, c.bands, LBFGSOptions{Progress: func(it int, loss float64) {
					if it%25 == 0 {
						b.Logf("iteration %d: loss %.8g (%v)", it, loss, time.Since(t0).Round(time.Second))
					}
				}})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(f.Status().Iterations), "iters")
				b.ReportMetric(float64(f.Status().Evals), "evals")
			}
		})
	}
}

// BenchmarkOptimalPrefixLarge: the fixed point to relative gap 1e-6 at
// n = 4096 and 8192 (the O(n²) iterations: well under 8x per doubling of
// n). The op is OptimalSingle, which returns X in factored
// form; with DPFL_EXPLICIT=1 the time of forming X and C afterwards
// (Factorization.Explicit, O(n³)) is reported as explicit-s, outside the
// op's time.
func BenchmarkOptimalPrefixLarge(b *testing.B) {
	for _, n := range []int{4096, 8192} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			longOnly(b, fmt.Sprintf("n=%d", n))
			w := Prefix(n)
			for i := 0; i < b.N; i++ {
				f, err := OptimalSingle(context.Background(), w, FixedPointOptions{Gap: 1e-6})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(f.Status().Iterations), "iters")
				if os.Getenv("DPFL_EXPLICIT") == "1" {
					b.StopTimer()
					t0 := time.Now()
					if err := f.Explicit(); err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(time.Since(t0).Seconds(), "explicit-s")
					b.StartTimer()
				}
			}
		})
	}
}

// BenchmarkBandMFEval: one loss-and-gradient evaluation of BandMF for
// prefix sums at the start point, by the row solves one row at a time
// ("plain"), four rows at a time with the AVX2 kernels ("rows4", the
// default below selMinN where AVX2 exists; bit-identical) and through the
// selected inverse ("selinv", the default from selMinN): the Choquette-Choo et al. 2023 sizes
// (n = 2052, 342 and 128 bands) and a production horizon (n = 8192, 64
// bands; plain skipped there).
func BenchmarkBandMFEval(b *testing.B) {
	for _, c := range []struct{ n, bw int }{{2052, 342}, {2052, 128}, {8192, 64}} {
		p := newBandProblem(Prefix(c.n), c.bw, func(i, j int) bool { return true })
		xs := make([]float64, p.n*p.bw)
		p.xFromParams(xs, p.start(nil))
		f, ok := reverseCholesky(xs, p.n, p.bw)
		if !ok {
			b.Fatal("start not positive definite")
		}
		g := make([]float64, p.n*p.bw)
		for _, name := range []string{"plain", "rows4", "selinv"} {
			b.Run(fmt.Sprintf("n=%d/bands=%d/%s", c.n, c.bw, name), func(b *testing.B) {
				switch {
				case name == "rows4" && !useAVX2:
					b.Skip("no AVX2")
				case name == "plain" && c.n > 2052:
					b.Skip("plain at n = 8192 takes minutes")
				}
				if name == "selinv" {
					e := newSelEval(p.w, p.bw)
					for i := 0; i < b.N; i++ {
						e.eval(xs, g)
					}
					return
				}
				p.plain = name == "plain"
				for i := 0; i < b.N; i++ {
					clear(g)
					p.lossGrad(f, g)
				}
			})
		}
	}
}

// BenchmarkBandMF342: the Choquette-Choo et al. 2023 Table 2 BandMF optimization (n = 2052,
// 342 bands, equal column norms; the L-BFGS options of
// experiments/paper/mechanisms.sh: relative tolerance 1e-6, at most 1000
// iterations), with the SHA-256 of X's bits in the log so that two builds
// can be compared.
func BenchmarkBandMF342(b *testing.B) {
	longOnly(b, "BandMF n=2052")
	w := Prefix(2052)
	for i := 0; i < b.N; i++ {
		f, err := BandMF(context.Background(), w, 342, LBFGSOptions{RelTol: 1e-6, MaxIter: 1000})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(f.Status().Iterations), "iters")
		b.ReportMetric(float64(f.Status().Evals), "evals")
		b.Logf("%s; X sha256 %x", f.Status().Message, gramHash(f))
	}
}

// gramHash is the SHA-256 of the bits of X's lower triangle, row by row.
func gramHash(f *Factorization) []byte {
	h := sha256.New()
	x := f.Gram()
	for r := 0; r < x.SymmetricDim(); r++ {
		for c := 0; c <= r; c++ {
			binary.Write(h, binary.LittleEndian, math.Float64bits(x.At(r, c)))
		}
	}
	return h.Sum(nil)
}

// BenchmarkMultiEpoch2052: the Choquette-Choo et al. 2023 Table 2 multi-epoch MF (n = 2052,
// (6,342), equal and unequal column norms) through the dual, certificate
// included, with the SHA-256 of X's bits in the log.
func BenchmarkMultiEpoch2052(b *testing.B) {
	longOnly(b, "multi-epoch MF n=2052")
	w := Prefix(2052)
	for _, unequal := range []bool{false, true} {
		name := map[bool]string{false: "T", true: "F"}[unequal]
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				var f *Factorization
				var err error
				if unequal {
					f, err = MultiEpochUnequal(context.Background(), w, 342, LBFGSOptions{RelTol: 1e-6, MaxIter: 1000})
				} else {
					f, err = MultiEpoch(context.Background(), w, 342, LBFGSOptions{RelTol: 1e-6, MaxIter: 1000})
				}
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(f.Status().Iterations), "iters")
				b.Logf("%s; X sha256 %x", f.Status().Message, gramHash(f))
			}
		})
	}
}

// BenchmarkMultiEpochDualVsLBFGS: side by side at n = 1026, (6,171), equal
// column norms: the dual against the dense L-BFGS it replaces (started, as
// Cache.MultiEpoch started it, from BandMF with 171 bands, whose time is
// included), L-BFGS options of the Table 2 script.
func BenchmarkMultiEpochDualVsLBFGS(b *testing.B) {
	longOnly(b, "multi-epoch MF n=1026 by L-BFGS")
	w := Prefix(1026)
	opts := LBFGSOptions{RelTol: 1e-6, MaxIter: 1000}
	report := func(b *testing.B, f *Factorization) {
		b.ReportMetric(float64(f.Status().Iterations), "iters")
		b.Logf("%s", f.Status().Message)
	}
	b.Run("dual", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			f, err := multiEpochDual(context.Background(), w, 171, false, opts)
			if err != nil {
				b.Fatal(err)
			}
			report(b, f)
		}
	})
	b.Run("lbfgs", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s, err := BandMF(context.Background(), w, 171, opts)
			if err != nil {
				b.Fatal(err)
			}
			o := opts
			o.Start = s.Gram()
			f, err := newMultiEpochProblem(w, 171).named("multi-epoch", context.Background(), o)
			if err != nil {
				b.Fatal(err)
			}
			report(b, f)
		}
	})
}
