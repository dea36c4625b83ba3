package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// inputs are random values over several scales plus the special cases.
func inputs(n int, r *rand.Rand) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(5)-2)))
	}
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, lo, hi, lo - 0.01, hi + 0.01, 88.7, -88, -100, 100,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-30, -1e-30, 0.3465736, -0.3465736}
	copy(x, special)
	r.Shuffle(n, func(i, j int) { x[i], x[j] = x[j], x[i] })
	return x
}

func same(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// TestAssemblyMatchesGo: every assembly loop gives the Go code's bits
// (NaN for NaN), on lengths with and without a tail, with the 16-lane
// loops and without them.
func TestAssemblyMatchesGo(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this machine: only the Go code runs")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 24, 31, 64, 1003, 4096} {
		x, y, g := inputs(n, r), inputs(n, r), inputs(n, r)
		ops := map[string]func(dst []float32){
			"exp":      func(d []float32) { Exp(d, x, 0) },
			"expShift": func(d []float32) { Exp(d, x, 1.5) },
			"sigmoid":  func(d []float32) { Sigmoid(d, x) },
			"tanh":     func(d []float32) { Tanh(d, x) },
			"relu":     func(d []float32) { Relu(d, x) },
			"reluGrad": func(d []float32) { ReluGrad(d, x, g) },
			"add":      func(d []float32) { copy(d, y); Add(d, x) },
			"mul":      func(d []float32) { Mul(d, x, g) },
			"axpySub":  func(d []float32) { p := append([]float32(nil), g...); AxpySub(d, y, p, -0.37, x) },
			"axpySubP": func(d []float32) { copy(d, g); AxpySub(make([]float32, len(d)), y, d, -0.37, x) },
			"axpy":     func(d []float32) { copy(d, y); Axpy(d, -0.37, x) },
			"scale":    func(d []float32) { Scale(d, 1.37, x) },
			"gelu":     func(d []float32) { Gelu(d, x) },
			"geluGrad": func(d []float32) { GeluGrad(d, x, g) },
		}
		for name, f := range ops {
			asm, avx2, ref := make([]float32, n), make([]float32, n), make([]float32, n)
			f(asm)
			saved := useAVX512
			useAVX512 = false
			f(avx2)
			useAVX2 = false
			f(ref)
			useAVX2, useAVX512 = true, saved
			for i := range asm {
				if !same(asm[i], ref[i]) || !same(avx2[i], ref[i]) {
					t.Fatalf("%s n=%d: element %d (x=%g): assembly %g (%#x), AVX2 only %g, Go %g (%#x)", name, n, i, x[i], asm[i], math.Float32bits(asm[i]), avx2[i], ref[i], math.Float32bits(ref[i]))
				}
			}
		}
	}
}

// TestExpfAccuracy: within 2 ulp of math.Exp on [−87.3, 88.3], 0 below,
// +Inf above, NaN for NaN.
func TestExpfAccuracy(t *testing.T) {
	worst := 0.0
	for x := float32(-87.3); x <= 88.3; x += 0.000731 * float32(1+math.Abs(float64(x))) {
		got, want := float64(Expf(x)), math.Exp(float64(x))
		ulp := float64(math.Nextafter32(float32(want), float32(math.Inf(1))) - float32(want))
		if e := math.Abs(got-want) / ulp; e > worst {
			worst = e
		}
	}
	if worst > 2 {
		t.Errorf("worst error %.2f ulp", worst)
	}
	t.Logf("worst error %.2f ulp", worst)
	if Expf(-87.31) != 0 || !math.IsInf(float64(Expf(88.31)), 1) || Expf(float32(math.NaN())) == Expf(float32(math.NaN())) {
		t.Error("range limits")
	}
	if Expf(0) != 1 {
		t.Errorf("e^0 = %g", Expf(0))
	}
}

// TestSigmoidTanh: within 3e-7 of the float64 functions (absolute), exact
// limits at ±Inf, odd symmetry of tanh.
func TestSigmoidTanh(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100000; i++ {
		x := float32(r.NormFloat64() * 6)
		if d := math.Abs(float64(Sigmoidf(x)) - 1/(1+math.Exp(-float64(x)))); d > 3e-7 {
			t.Fatalf("sigmoid(%g) off by %g", x, d)
		}
		if d := math.Abs(float64(Tanhf(x)) - math.Tanh(float64(x))); d > 3e-7 {
			t.Fatalf("tanh(%g) off by %g", x, d)
		}
		if Tanhf(-x) != -Tanhf(x) {
			t.Fatalf("tanh(−%g) ≠ −tanh(%g)", x, x)
		}
	}
	inf := float32(math.Inf(1))
	if Sigmoidf(inf) != 1 || Sigmoidf(-inf) != 0 || Tanhf(inf) != 1 || Tanhf(-inf) != -1 {
		t.Error("limits at infinity")
	}
}

func BenchmarkExp(b *testing.B) {
	x := inputs(1004, rand.New(rand.NewPCG(5, 6)))
	d := make([]float32, len(x))
	for _, asm := range []bool{true, false} {
		name := "go"
		if asm {
			name = "asm"
		}
		b.Run(name, func(b *testing.B) {
			saved := useAVX2
			useAVX2 = asm && saved
			defer func() { useAVX2 = saved }()
			for i := 0; i < b.N; i++ {
				Exp(d, x, 3)
			}
			b.ReportMetric(float64(b.N*len(x))/b.Elapsed().Seconds()/1e9, "Gexp/s")
		})
	}
}
