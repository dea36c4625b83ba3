package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

func same64(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (a != a && b != b)
}

func slots(t int, r *rand.Rand) []float64 {
	s := make([]float64, t)
	for i := range s {
		s[i] = r.NormFloat64() * math.Pow(10, float64(r.IntN(5)-2))
	}
	return s
}

// TestPeriodicAssemblyMatchesGo: every periodic kernel's assembly gives the
// Go code's bits, outputs and accumulators, for periods of 8 to 128 (two
// different periods where a kernel has two) and lengths with and without a
// tail, a partial period and several.
func TestPeriodicAssemblyMatchesGo(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this machine: only the Go code runs")
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, per := range [][2]int{{8, 8}, {16, 16}, {32, 32}, {32, 128}, {96, 32}, {128, 128}} {
		ts, tc := per[0], per[1]
		for _, n := range []int{1, 7, 8, 9, 64, 100, 1003, 4096} {
			x, g, gain, bias := inputs(n, r), inputs(n, r), inputs(tc, r), inputs(tc, r)
			a, b, sc := slots(ts, r), slots(ts, r), slots(ts, r)
			init0, init1 := slots(ts, r), slots(ts, r)
			ops := map[string]func(d []float32, s0, s1 []float64){
				"SumP": func(_ []float32, s0, _ []float64) { SumP(s0, x) },
				"SumRows": func(d []float32, _, _ []float64) {
					acc := append([]float32(nil), gain...)
					SumRows(acc, x)
					copy(d, acc)
				},
				"SumSqDevP": func(_ []float32, s0, _ []float64) { SumSqDevP(s0, a, x) },
				"NormP":     func(d []float32, _, _ []float64) { NormP(d, x, a, sc) },
				"AffineP":   func(d []float32, _, _ []float64) { AffineP(d, x, gain, bias) },
				"SumProdP":  func(_ []float32, s0, s1 []float64) { SumProdP(s0, s1, g, x) },
				"DotsP":     func(_ []float32, s0, s1 []float64) { DotsP(s0, s1, g, gain, x) },
				"GradXP":    func(d []float32, _, _ []float64) { GradXP(d, g, gain, x, a, b, sc) },
			}
			for name, f := range ops {
				var out [2][]float32
				var acc [2][2][]float64
				for k, asm := range []bool{true, false} {
					useAVX2 = asm
					out[k] = make([]float32, n)
					acc[k] = [2][]float64{append([]float64(nil), init0...), append([]float64(nil), init1...)}
					f(out[k], acc[k][0], acc[k][1])
				}
				useAVX2 = true
				for i := range out[0] {
					if !same(out[0][i], out[1][i]) {
						t.Fatalf("%s ts=%d tc=%d n=%d: value %d: assembly %g, Go %g", name, ts, tc, n, i, out[0][i], out[1][i])
					}
				}
				for j := range acc[0] {
					for s := range acc[0][j] {
						if !same64(acc[0][j][s], acc[1][j][s]) {
							t.Fatalf("%s ts=%d tc=%d n=%d: accumulator %d slot %d: assembly %g, Go %g", name, ts, tc, n, j, s, acc[0][j][s], acc[1][j][s])
						}
					}
				}
			}
		}
	}
}

// TestPeriodicReference: the kernels against a plain float64 evaluation of
// their definitions, slot by slot (the sums in index order): each output
// within half a float32 ulp of the exact formula's float64 value plus
// 1e-12 relative, each accumulator within 1e-12 relative; and a wrong slot
// (the period off by 8) is caught.
func TestPeriodicReference(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const n, ts, tc = 1003, 32, 96
	x, g := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], g[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	gain := make([]float32, tc)
	for i := range gain {
		gain[i] = float32(1 + r.NormFloat64()/4)
	}
	a, b, sc := slots(ts, r), slots(ts, r), slots(ts, r)
	sh, shx := make([]float64, ts), make([]float64, ts)
	DotsP(sh, shx, g, gain, x)
	dx := make([]float32, n)
	GradXP(dx, g, gain, x, a, b, sc)
	check := func(name string, got, want float64, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Fatalf("%s: %g, want %g (tolerance %g)", name, got, want, tol)
		}
	}
	wsh, wshx := make([]float64, ts), make([]float64, ts)
	for i := range g {
		h := float64(g[i]) * float64(gain[i%tc])
		wsh[i%ts] += h
		wshx[i%ts] += h * float64(x[i])
		want := ((h - a[i%ts]) - float64(x[i])*b[i%ts]) * sc[i%ts]
		check("GradXP", float64(dx[i]), want, math.Abs(want)*(0x1p-24+1e-12))
	}
	for s := range sh {
		check("DotsP sums", sh[s], wsh[s], 1e-12*math.Abs(wsh[s])+1e-300)
		check("DotsP products", shx[s], wshx[s], 1e-12*math.Abs(wshx[s])+1e-300)
	}
	// Negative control: slots of the wrong period give other sums.
	bad := make([]float64, ts+8)
	SumP(bad, x)
	good := make([]float64, ts)
	SumP(good, x)
	if same64(bad[1], good[1]) && same64(bad[ts-1], good[ts-1]) {
		t.Fatal("a period of ts+8 gave the sums of period ts")
	}
}

// TestAddStrided: the assembly gives the Go code's bits for widths with
// and without a tail, and the result is the runs' sums (values outside the
// runs untouched, checked against a plain loop on a copy).
func TestAddStrided(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	saved := useAVX2
	defer func() { useAVX2 = saved }()
	for _, c := range [][4]int{{8, 8, 24, 14}, {16, 32, 144, 7}, {3, 6, 9, 5}, {12, 12, 40, 9}, {8, 8, 8, 1}} {
		width, ds, ss, count := c[0], c[1], c[2], c[3]
		src := inputs((count-1)*ss+width, r)
		base := inputs((count-1)*ds+width+5, r)
		want := append([]float32(nil), base...)
		for k := 0; k < count; k++ {
			for j := 0; j < width; j++ {
				want[k*ds+j] += src[k*ss+j]
			}
		}
		for _, asm := range []bool{true, false} {
			useAVX2 = asm && saved
			got := append([]float32(nil), base...)
			AddStrided(got, ds, src, ss, width, count)
			for i := range got {
				if !same(got[i], want[i]) {
					t.Fatalf("width %d ds %d ss %d count %d (asm %v): value %d is %g, want %g", width, ds, ss, count, asm, i, got[i], want[i])
				}
			}
		}
	}
}

// TestSumRows: for periods of 8 to 1004 (multiples of 8 or not, held in
// registers, in memory or added row by row) and lengths with a partial last
// row, SumRows gives the bits of adding the values into their slots one
// after another.
func TestSumRows(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, per := range []int{8, 16, 24, 64, 72, 100, 1004} {
		for _, n := range []int{0, 5, per, 3*per + 5, 20 * per} {
			x, acc := inputs(n, r), inputs(per, r)
			want := append([]float32(nil), acc...)
			for i, v := range x {
				want[i%per] += v
			}
			SumRows(acc, x)
			for i := range acc {
				if !same(acc[i], want[i]) {
					t.Fatalf("period %d, %d values: slot %d is %g, want %g", per, n, i, acc[i], want[i])
				}
			}
		}
	}
}
