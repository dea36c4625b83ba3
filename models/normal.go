package models

import "math"

// The standard normal distribution function Φ and density φ for GELU, by
// cubic Hermite interpolation between exact values (math.Erfc, math.Exp) at
// the points k/normSteps of [−normEdge, normEdge]: on each interval a cubic
// matches the function and its derivative at both ends (Φ' = φ,
// φ' = −x·φ). The error of such a cubic is at most h⁴/384 times the
// function's largest fourth derivative (below 1.5 for both), so below 3e-9
// for h = 1/32 (TestNormalTables measures it). Beyond the edges Φ is 0 or 1
// and φ is 0 (Φ(−7) ≈ 1.3e-12, φ(7) ≈ 9.1e-12). math.Erf costs several times more, and
// Gorgonia's graph is evaluated one value at a time here.
const (
	normEdge  = 7
	normSteps = 32
)

// normTable holds the cubic's coefficients per interval, lowest degree
// first, in the interval's position t ∈ [0, 1).
type normTable [2 * normEdge * normSteps][4]float64

var normCDFTable, normPDFTable = normTables()

func normTables() (*normTable, *normTable) {
	cdf := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	pdf := func(x float64) float64 { return math.Exp(-0.5*x*x) / math.Sqrt(2*math.Pi) }
	dpdf := func(x float64) float64 { return -x * pdf(x) }
	var c, p normTable
	h := 1.0 / normSteps
	for k := range c {
		x0, x1 := -normEdge+float64(k)*h, -normEdge+float64(k+1)*h
		c[k] = hermite(cdf(x0), cdf(x1), pdf(x0)*h, pdf(x1)*h)
		p[k] = hermite(pdf(x0), pdf(x1), dpdf(x0)*h, dpdf(x1)*h)
	}
	return &c, &p
}

// hermite returns the coefficients in t of the cubic with values f0, f1 and
// slopes (per unit of t) m0, m1 at t = 0 and 1.
func hermite(f0, f1, m0, m1 float64) [4]float64 {
	return [4]float64{f0, m0, 3*(f1-f0) - 2*m0 - m1, 2*(f0-f1) + m0 + m1}
}

// lookup evaluates a table inside (−normEdge, normEdge).
func (tb *normTable) lookup(x float64) float64 {
	u := (x + normEdge) * normSteps
	k := min(int(u), len(tb)-1) // u rounds to the end for x just below normEdge
	t := u - float64(k)
	c := &tb[k]
	return c[0] + t*(c[1]+t*(c[2]+t*c[3]))
}

// normCDF is Φ(x) (NaN gives 0; x·Φ(x) is still NaN).
func normCDF(x float64) float64 {
	switch {
	case x > -normEdge && x < normEdge:
		return normCDFTable.lookup(x)
	case x >= normEdge:
		return 1
	}
	return 0
}

// normPDF is φ(x) (NaN gives 0; x·φ(x) is still NaN).
func normPDF(x float64) float64 {
	if x > -normEdge && x < normEdge {
		return normPDFTable.lookup(x)
	}
	return 0
}
