package privacy

import "math"

// logErfc returns log(erfc(x)) without underflow for large x.
func logErfc(x float64) float64 {
	if x < 20 {
		return math.Log(math.Erfc(x))
	}
	// Asymptotic expansion erfc(x) = exp(-x^2)/(x sqrt(pi)) (1 - 1/(2x^2) + 3/(4x^4) - 15/(8x^6) + ...),
	// relative error of the truncation below 1e-9 for x >= 20.
	r := 1 / (2 * x * x)
	return -x*x - math.Log(x) - 0.5*math.Log(math.Pi) + math.Log1p(-r+3*r*r-15*r*r*r)
}

// logPhi returns log Phi(x) for the standard normal CDF Phi.
func logPhi(x float64) float64 {
	return math.Log(0.5) + logErfc(-x/math.Sqrt2)
}

// phi returns the standard normal CDF.
func phi(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// logAdd returns log(exp(a) + exp(b)).
func logAdd(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(b, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// logSub returns log(exp(a) - exp(b)) for a >= b (-Inf when equal).
func logSub(a, b float64) float64 {
	if math.IsInf(b, -1) {
		return a
	}
	if a <= b {
		return math.Inf(-1)
	}
	d := b - a
	if d > -0.69 {
		return a + math.Log(-math.Expm1(d))
	}
	return a + math.Log1p(-math.Exp(d))
}
