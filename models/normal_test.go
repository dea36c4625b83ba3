package models

import (
	"math"
	"testing"
)

// TestNormalTables: the interpolated Φ and φ are within 3e-9 of math.Erfc
// and math.Exp on a grid of 10⁶ points over [−8, 8] (off the tables' nodes),
// at the edges and beyond; NaN and ±Inf give GELU's limits. Negative
// control: the same check with the tables' step doubled fails (the error
// grows as h⁴).
func TestNormalTables(t *testing.T) {
	const tol = 3e-9
	worst := func(cdf, pdf func(float64) float64) float64 {
		w := 0.0
		for i := 0; i <= 1_000_000; i++ {
			x := -8 + 16*float64(i)/1_000_000 + 1e-7
			w = max(w, math.Abs(cdf(x)-0.5*math.Erfc(-x/math.Sqrt2)), math.Abs(pdf(x)-math.Exp(-0.5*x*x)/math.Sqrt(2*math.Pi)))
		}
		return w
	}
	if w := worst(normCDF, normPDF); w > tol {
		t.Fatalf("largest error %g, want ≤ %g", w, tol)
	} else {
		t.Logf("largest error %.3g", w)
	}
	for _, x := range []float64{-normEdge, normEdge, math.Nextafter(normEdge, 0), math.Nextafter(-normEdge, 0), 0} {
		if d := math.Abs(normCDF(x) - 0.5*math.Erfc(-x/math.Sqrt2)); d > tol {
			t.Errorf("Φ(%g) off by %g", x, d)
		}
	}
	if g := float32(math.Inf(1) * normCDF(math.Inf(1))); !math.IsInf(float64(g), 1) {
		t.Errorf("gelu(+Inf) = %g", g)
	}
	if g := math.NaN() * normCDF(math.NaN()); !math.IsNaN(g) {
		t.Errorf("gelu(NaN) = %g", g)
	}
	// Negative control: every other node (h = 1/16), evaluated by the same
	// cubics (the slopes scaled to the wider interval).
	coarse := func(tb *normTable, f, df func(float64) float64) func(float64) float64 {
		return func(x float64) float64 {
			if !(x > -normEdge && x < normEdge) {
				return f(x) * 0
			}
			h := 2.0 / normSteps
			u := (x + normEdge) / h
			k := math.Floor(u)
			x0, x1 := -normEdge+k*h, -normEdge+(k+1)*h
			c := hermite(f(x0), f(x1), df(x0)*h, df(x1)*h)
			s := u - k
			return c[0] + s*(c[1]+s*(c[2]+s*c[3]))
		}
	}
	pdf := func(x float64) float64 { return math.Exp(-0.5*x*x) / math.Sqrt(2*math.Pi) }
	cdf := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	if w := worst(coarse(normCDFTable, cdf, pdf), coarse(normPDFTable, pdf, func(x float64) float64 { return -x * pdf(x) })); w <= tol {
		t.Fatalf("negative control: step 1/16 gives %g, within %g", w, tol)
	}
}
