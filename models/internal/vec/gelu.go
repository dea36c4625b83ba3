package vec

import "math"

// GELU in float32: x·Φ(x), Φ the standard normal distribution function
// (the exact form, not the tanh approximation). With a = |x| and
// q = Φ(−a) = Φ(x) for x < 0 (1 − q for x ≥ 0),
//
//	q = e^(−a²/2) · t · P(t),  t = 1/(1 + a/4),
//
// P of degree 8 fitted (weighted least squares on Chebyshev nodes) to
// q·e^(a²/2)/t over a ∈ [0, 13.3], where e^(−a²/2) leaves float32's normal
// range. The fit's relative error is below 6e-8; evaluated in float32
// (with Expf's 2 ulp and the rounding of a², scaled by the exponent) Φ is
// within 2.5e-7 of the true value everywhere (4 ulps at 1/2) and within
// 1.5e-6 relatively for x ≥ −8, GELU and its derivative within
// 2.5e-7·(1 + |x|) (TestGeluAccuracy measures them against math.Erfc). The density is φ(x) = e^(−a²/2)/√(2π)
// from the same exponential, so the gradient costs one pass with no state
// kept from the forward pass.
var geluP = [9]float32{
	0.099807553, 0.0983507708, 0.104901463, 0.0285013132, 0.212002471,
	-0.22046338, 0.308866888, -0.158950567, 0.0269834641,
}

const invSqrt2Pi = 0.398942280401432678 // 1/√(2π)

// normf returns Φ(x) and e^(−x²/2) (NaN gives NaN; Φ(±Inf) is 1 or 0).
func normf(x float32) (cdf, e float32) {
	a := math.Float32frombits(math.Float32bits(x) &^ signBit)
	e = Expf(float32(a*a) * -0.5)
	t := 1 / (1 + float32(a*0.25))
	p := geluP[8]
	for k := 7; k >= 0; k-- {
		p = float32(p*t) + geluP[k]
	}
	q := e * float32(t*p)
	if math.Float32bits(x)&signBit != 0 {
		return q, e
	}
	return 1 - q, e
}

// Phif returns Φ(x), the standard normal distribution function.
func Phif(x float32) float32 {
	cdf, _ := normf(x)
	return cdf
}

// Geluf returns x·Φ(x) (NaN and −Inf give NaN, +Inf gives +Inf).
func Geluf(x float32) float32 {
	cdf, _ := normf(x)
	return x * cdf
}

// GeluGradf returns g·(Φ(x) + x·φ(x)), g times GELU's derivative at x.
func GeluGradf(x, g float32) float32 {
	cdf, e := normf(x)
	pdf := e * invSqrt2Pi
	return g * (cdf + float32(x*pdf))
}

// Gelu sets dst[i] = x[i]·Φ(x[i]).
func Gelu(dst, x []float32) {
	x = x[:len(dst)]
	i := geluAsm(dst, x)
	for ; i < len(dst); i++ {
		dst[i] = Geluf(x[i])
	}
}

// GeluGrad sets dst[i] = g[i]·(Φ(x[i]) + x[i]·φ(x[i])); dst may be g.
func GeluGrad(dst, x, g []float32) {
	x, g = x[:len(dst)], g[:len(dst)]
	i := geluGradAsm(dst, x, g)
	for ; i < len(dst); i++ {
		dst[i] = GeluGradf(x[i], g[i])
	}
}
