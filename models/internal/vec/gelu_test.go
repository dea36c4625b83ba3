package vec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// phi64 and gelu64 are the float64 references (math.Erfc).
func phi64(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// geluErrors returns the largest absolute error of Φ over x ∈ [−14, 14],
// its largest relative error over [−8, 0], and the largest errors of GELU
// and its derivative relative to 1 + |x| (float32's rounding scales with
// the value), against float64 references on a grid of 2·10⁶ points.
func geluErrors(cdf func(float32) float32) (abs, rel, gelu, grad float64) {
	const n = 2_000_000
	for i := 0; i <= n; i++ {
		x := float32(-14 + 28*float64(i)/n)
		xf := float64(x)
		want := phi64(xf)
		got := float64(cdf(x))
		abs = max(abs, math.Abs(got-want))
		if xf >= -8 && xf <= 0 {
			rel = max(rel, math.Abs(got-want)/want)
		}
		gelu = max(gelu, math.Abs(float64(Geluf(x))-xf*want)/(1+math.Abs(xf)))
		dwant := want + xf*math.Exp(-0.5*xf*xf)/math.Sqrt(2*math.Pi)
		grad = max(grad, math.Abs(float64(GeluGradf(x, 1))-dwant)/(1+math.Abs(xf)))
	}
	return
}

// TestGeluAccuracy: Φ within 2.5e-7 (4 float32 ulps at 1/2) of
// 0.5·erfc(−x/√2) on [−14, 14] and within 1.5e-6 relatively on [−8, 0];
// GELU and its derivative within 2.5e-7·(1 + |x|) of x·Φ(x) and
// Φ(x) + x·φ(x). Negative control: the same
// check on Φ with the polynomial's last coefficient dropped fails.
func TestGeluAccuracy(t *testing.T) {
	const absTol, relTol, tol = 2.5e-7, 1.5e-6, 2.5e-7
	abs, rel, gelu, grad := geluErrors(Phif)
	t.Logf("Φ: %.3g absolute, %.3g relative on [−8, 0]; GELU %.3g, derivative %.3g (relative to 1+|x|)", abs, rel, gelu, grad)
	if abs > absTol || rel > relTol || gelu > tol || grad > tol {
		t.Errorf("errors %.3g, %.3g, %.3g, %.3g: want ≤ %g, %g, %g, %g", abs, rel, gelu, grad, absTol, relTol, tol, tol)
	}
	saved := geluP[8]
	geluP[8] = 0
	abs, rel, _, _ = geluErrors(Phif)
	geluP[8] = saved
	if abs <= absTol && rel <= relTol {
		t.Errorf("negative control: without the last coefficient Φ is within %.3g (%.3g relative)", abs, rel)
	}
}

// TestGeluSpecial: GELU's limits and symmetries: Φ(0) = 1/2 to rounding,
// Φ(x) + Φ(−x) = 1 to rounding, GELU(+Inf) = +Inf, NaN for NaN and −Inf
// (x·Φ(x) with Φ = 0), GELU(x) = x for large x and −0 far below zero.
func TestGeluSpecial(t *testing.T) {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	if d := math.Abs(float64(Phif(0)) - 0.5); d > 6e-8 {
		t.Errorf("Φ(0) = %g", Phif(0))
	}
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 100000; i++ {
		x := float32(r.NormFloat64() * 3)
		if d := math.Abs(float64(Phif(x)+Phif(-x)) - 1); d > 1.2e-7 {
			t.Fatalf("Φ(%g) + Φ(−%g) − 1 = %g", x, x, d)
		}
	}
	if g := Geluf(inf); !math.IsInf(float64(g), 1) {
		t.Errorf("GELU(+Inf) = %g", g)
	}
	if g := Geluf(nan); g == g {
		t.Errorf("GELU(NaN) = %g", g)
	}
	if g := Geluf(-inf); g == g {
		t.Errorf("GELU(−Inf) = %g", g)
	}
	if g := Geluf(30); g != 30 {
		t.Errorf("GELU(30) = %g", g)
	}
	if g := Geluf(-30); g != 0 || !math.Signbit(float64(g)) {
		t.Errorf("GELU(−30) = %g", g)
	}
	if d := GeluGradf(30, 2); d != 2 {
		t.Errorf("GELU'(30)·2 = %g", d)
	}
	if d := GeluGradf(-30, 2); d != 0 {
		t.Errorf("GELU'(−30)·2 = %g", d)
	}
}

// TestGeluGradInPlace: GeluGrad may write over its gradient operand.
func TestGeluGradInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	x, g := inputs(1003, r), inputs(1003, r)
	want := make([]float32, len(x))
	GeluGrad(want, x, g)
	GeluGrad(g, x, g)
	for i := range g {
		if !same(g[i], want[i]) {
			t.Fatalf("element %d: in place %g, apart %g", i, g[i], want[i])
		}
	}
}

// BenchmarkGelu: forward and gradient passes over 4,096 values (in cache)
// and over the benchmark transformer's MLP activations (1,280 tokens × 512).
func BenchmarkGelu(b *testing.B) {
	for _, n := range []int{4096, 1280 * 512} {
		x := inputs(n, rand.New(rand.NewPCG(5, 6)))
		d := make([]float32, len(x))
		for _, asm := range []bool{true, false} {
			name := fmt.Sprintf("n=%d/go", n)
			if asm {
				name = fmt.Sprintf("n=%d/asm", n)
			}
			b.Run(name, func(b *testing.B) {
				saved := useAVX2
				useAVX2 = asm && saved
				defer func() { useAVX2 = saved }()
				for i := 0; i < b.N; i++ {
					Gelu(d, x)
					GeluGrad(d, x, d)
				}
				b.ReportMetric(float64(b.N*len(x))/b.Elapsed().Seconds()/1e9, "Gvalues/s")
			})
		}
	}
}
