// Package vec is dpfl's vectorized float32 elementwise kernels: exp,
// sigmoid, tanh, ReLU and its gradient, GELU and its gradient (gelu.go),
// add, multiply, axpy and rows scaled and added in order (rows.go), plus
// the periodic kernels of the normalization layers, pooling and col2im
// (periodic.go: per-slot float64 sums, strided adds), as Go assembly for
// AVX2 on amd64 (GELU also for AVX-512; chosen at run time) with pure-Go
// code elsewhere and for the tails.
//
// The assembly performs exactly the operations of the Go code, in the same
// order and without fused multiply-adds, so both give the same bits on every
// input (the tests compare them bit for bit): results do not depend on the
// CPU. Every function panics if its slices are shorter than dst.
//
// Package vec imports golang.org/x/sys/cpu and the standard library.
package vec

import "math"

// Expf's range: below lo it returns 0, above hi +Inf.
const (
	lo = -87.3
	hi = 88.3
)

const signBit = 0x80000000

// Expf returns e^x to within 2 ulp: x = n·ln2 + r with |r| ≤ ln2/2, e^r from
// Cephes' expf polynomial, 2^n through the exponent bits. It returns 0 below
// −87.3, +Inf above 88.3 (a little early: e^88.7 is the float32 limit), and
// NaN for NaN.
func Expf(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		c1    = 0.693359375 // ln 2 = c1 + c2, c1 with few significant bits
		c2    = -2.12194440e-4
	)
	switch {
	case x != x:
		return x
	case x < lo:
		return 0
	case x > hi:
		return float32(math.Inf(1))
	}
	t := x * log2e
	h := float32(0.5)
	if math.Float32bits(t)&signBit != 0 {
		h = -0.5
	}
	k := int32(t + h) // round half away from zero
	n := float32(k)
	r := x - float32(n*c1)
	r -= float32(n * c2)
	p := float32(1.9875691500e-4)
	p = float32(p*r) + 1.3981999507e-3
	p = float32(p*r) + 8.3334519073e-3
	p = float32(p*r) + 4.1665795894e-2
	p = float32(p*r) + 1.6666665459e-1
	p = float32(p*r) + 5.0000001201e-1
	p = float32(float32(p*r)*r) + r + 1
	return p * math.Float32frombits(uint32(k+127)<<23)
}

// Sigmoidf returns 1/(1+e^−x).
func Sigmoidf(x float32) float32 { return 1 / (1 + Expf(-x)) }

// Tanhf returns tanh x as (1−e)/(1+e) with e = e^−2|x|, with x's sign.
func Tanhf(x float32) float32 {
	a := math.Float32frombits(math.Float32bits(x) &^ signBit)
	e := Expf(-2 * a)
	t := (1 - e) / (1 + e)
	return math.Float32frombits(math.Float32bits(t) | math.Float32bits(x)&signBit)
}

// Exp sets dst[i] = e^(x[i]−shift).
func Exp(dst, x []float32, shift float32) {
	x = x[:len(dst)]
	i := expAsm(dst, x, shift)
	for ; i < len(dst); i++ {
		dst[i] = Expf(x[i] - shift)
	}
}

// Sigmoid sets dst[i] = 1/(1+e^−x[i]).
func Sigmoid(dst, x []float32) {
	x = x[:len(dst)]
	i := sigmoidAsm(dst, x)
	for ; i < len(dst); i++ {
		dst[i] = Sigmoidf(x[i])
	}
}

// Tanh sets dst[i] = tanh x[i].
func Tanh(dst, x []float32) {
	x = x[:len(dst)]
	i := tanhAsm(dst, x)
	for ; i < len(dst); i++ {
		dst[i] = Tanhf(x[i])
	}
}

// Relu sets dst[i] = x[i], or 0 where x[i] < 0 (NaN stays NaN).
func Relu(dst, x []float32) {
	x = x[:len(dst)]
	i := reluAsm(dst, x)
	for ; i < len(dst); i++ {
		if v := x[i]; 0 > v {
			dst[i] = 0
		} else {
			dst[i] = v
		}
	}
}

// ReluGrad sets dst[i] = g[i] where y[i] > 0, else 0.
func ReluGrad(dst, y, g []float32) {
	y, g = y[:len(dst)], g[:len(dst)]
	i := reluGradAsm(dst, y, g)
	for ; i < len(dst); i++ {
		if y[i] > 0 {
			dst[i] = g[i]
		} else {
			dst[i] = 0
		}
	}
}

// Add sets dst[i] += x[i].
func Add(dst, x []float32) {
	x = x[:len(dst)]
	i := addAsm(dst, x)
	for ; i < len(dst); i++ {
		dst[i] += x[i]
	}
}

// Mul sets dst[i] = x[i]·y[i].
func Mul(dst, x, y []float32) {
	x, y = x[:len(dst)], y[:len(dst)]
	i := mulAsm(dst, x, y)
	for ; i < len(dst); i++ {
		dst[i] = x[i] * y[i]
	}
}

// AxpySub sets p[i] += a·x[i] and then dst[i] = b[i] − p[i], each
// operation rounded (no fused multiply-add): Axpy(p, a, x) then
// Sub(dst, b, p), in one pass.
func AxpySub(dst, b, p []float32, a float32, x []float32) {
	b, p, x = b[:len(dst)], p[:len(dst)], x[:len(dst)]
	i := axpySubAsm(dst, b, p, a, x)
	for ; i < len(dst); i++ {
		p[i] += float32(a * x[i])
		dst[i] = b[i] - p[i]
	}
}

// Axpy sets dst[i] += a·x[i] (the product rounded, then the sum: no fused
// multiply-add).
func Axpy(dst []float32, a float32, x []float32) {
	x = x[:len(dst)]
	i := axpyAsm(dst, a, x)
	for ; i < len(dst); i++ {
		dst[i] += float32(a * x[i])
	}
}

// Scale sets dst[i] = a·x[i].
func Scale(dst []float32, a float32, x []float32) {
	x = x[:len(dst)]
	i := scaleAsm(dst, a, x)
	for ; i < len(dst); i++ {
		dst[i] = a * x[i]
	}
}

// Sum returns Σ x[i] in float64, over four interleaved partial sums
// ((s0+s1)+(s2+s3)) so the additions overlap.
func Sum(x []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += float64(x[i])
		s1 += float64(x[i+1])
		s2 += float64(x[i+2])
		s3 += float64(x[i+3])
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i])
	}
	return (s0 + s1) + (s2 + s3)
}
