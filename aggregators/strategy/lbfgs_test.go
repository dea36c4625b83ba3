package strategy

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/floats"
)

// TestTwoLoopHalves: the two-loop recursion by halves gives the direction
// of the plain recursion up to rounding (1e-12 relative), with the same
// bits on one thread and on two, and its slope is g·d. Negative control:
// with one history pair's ρ perturbed by 1e-6 the direction moves by more
// than the tolerance.
func TestTwoLoopHalves(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ dim, hist int }{{1, 0}, {37, 3}, {1000, 20}, {4099, 7}} {
		vec := func() []float64 {
			v := make([]float64, c.dim)
			for i := range v {
				v[i] = r.NormFloat64()
			}
			return v
		}
		g := vec()
		var s, y [][]float64
		var rho []float64
		for k := 0; k < c.hist; k++ {
			sk, yk := vec(), vec()
			// y = (I + 0.5·diag) s + small: a convex quadratic's pairs.
			for i := range yk {
				yk[i] = (1+0.5*math.Abs(math.Sin(float64(i))))*sk[i] + 0.01*yk[i]
			}
			s, y, rho = append(s, sk), append(y, yk), append(rho, 1/floats.Dot(sk, yk))
		}
		plain := make([]float64, c.dim)
		alpha := make([]float64, c.hist)
		copy(plain, g)
		for i := c.hist - 1; i >= 0; i-- {
			alpha[i] = rho[i] * floats.Dot(s[i], plain)
			floats.AddScaled(plain, -alpha[i], y[i])
		}
		gamma := 1 / floats.Norm(g, 2)
		if k := c.hist - 1; k >= 0 {
			gamma = floats.Dot(s[k], y[k]) / floats.Dot(y[k], y[k])
		}
		floats.Scale(gamma, plain)
		for i := range s {
			floats.AddScaled(plain, alpha[i]-rho[i]*floats.Dot(y[i], plain), s[i])
		}
		floats.Scale(-1, plain)
		run := func(procs int, rho []float64) ([]float64, float64) {
			old := runtime.GOMAXPROCS(procs)
			defer runtime.GOMAXPROCS(old)
			var p spinPair
			d := make([]float64, c.dim)
			slope := twoLoopHalves(&p, d, g, s, y, rho, make([]float64, c.hist))
			return d, slope
		}
		d1, slope1 := run(1, rho)
		d2, slope2 := run(2, rho)
		scale := floats.Norm(plain, math.Inf(1))
		dist := func(d []float64) float64 {
			m := 0.0
			for i := range d {
				m = math.Max(m, math.Abs(d[i]-plain[i]))
			}
			return m / scale
		}
		if e := dist(d1); e > 1e-12 {
			t.Fatalf("dim %d, %d pairs: halves %.3g from the plain recursion (relative)", c.dim, c.hist, e)
		}
		for i := range d1 {
			if !sameBits(d1[i], d2[i]) {
				t.Fatalf("dim %d, %d pairs: entry %d %v on one thread, %v on two", c.dim, c.hist, i, d1[i], d2[i])
			}
		}
		if !sameBits(slope1, slope2) || math.Abs(slope1-floats.Dot(g, d1)) > 1e-12*math.Abs(slope1) || !(slope1 < 0) {
			t.Fatalf("dim %d, %d pairs: slope %v / %v, g·d %v", c.dim, c.hist, slope1, slope2, floats.Dot(g, d1))
		}
		if c.hist > 0 {
			bad := append([]float64(nil), rho...)
			bad[0] *= 1 + 1e-6
			if d, _ := run(2, bad); !(dist(d) > 1e-12) {
				t.Fatalf("dim %d, %d pairs: a perturbed ρ moved the direction by only %.3g", c.dim, c.hist, dist(d))
			}
		}
	}
}
