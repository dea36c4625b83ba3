package aggregators

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
)

// quantCase returns n coordinates that exercise addQuantized at the scale
// 2^e (s1·s2): ordinary values, exact ties at half a unit, values beyond
// the saturation in both directions, zeros of both signs and subnormals;
// and 128-bit accumulators preset to random words (hi·2⁶⁴ + int64(lo)),
// many with lo words near ±2⁶³ so that the signed adds overflow.
func quantCase(n, e int, seed uint64) (lo []uint64, hi []int64, x []float32) {
	r := rand.New(rand.NewPCG(seed, 2))
	x = make([]float32, n)
	for i := range x {
		switch r.IntN(8) {
		case 0, 1, 2:
			x[i] = float32(r.NormFloat64() * math.Ldexp(1, -r.IntN(40)))
		case 3: // a tie: (k + 1/2)·2^-e, exact in float32 for k < 2²³
			x[i] = float32(math.Ldexp(float64(r.IntN(1<<22))+0.5, -e))
			if r.IntN(2) == 0 {
				x[i] = -x[i]
			}
		case 4: // beyond ±(2⁶³ − 1024) units
			x[i] = float32(math.Ldexp(1+r.Float64(), 63-e) * float64(1-2*r.IntN(2)))
		case 5:
			x[i] = float32(math.Copysign(0, float64(1-2*r.IntN(2))))
		case 6:
			x[i] = math.Float32frombits(uint32(r.IntN(1<<23)) | uint32(r.IntN(2))<<31)
		default: // about ±1 unit
			x[i] = float32(math.Ldexp(r.Float64()*4-2, -e))
		}
	}
	lo, hi = make([]uint64, n), make([]int64, n)
	for i := range lo {
		lo[i], hi[i] = r.Uint64(), int64(r.Uint64())
		if r.IntN(2) == 0 { // next to the overflow, on either side
			lo[i] = uint64(math.MaxInt64) - uint64(r.IntN(1<<20)) + uint64(r.IntN(2))<<63
		}
	}
	return lo, hi, x
}

// quantOracle is addQuantized in exact arithmetic (math/big), independent
// of its float64 steps: q = x·f rounded to float32, times 2^e, rounded to
// the nearest integer (ties to even), saturated at ±(2⁶³ − 1024), added
// to hi·2⁶⁴ + int64(lo) modulo 2¹²⁸, the result written back with lo in
// [−2⁶³, 2⁶³).
func quantOracle(lo []uint64, hi []int64, x []float32, f float32, e int) {
	limit := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 63), big.NewInt(1024))
	mod := new(big.Int).Lsh(big.NewInt(1), 128)
	for i, v := range x {
		y := new(big.Float).SetFloat64(float64(v * f))
		y.SetMantExp(y, e)
		q, _ := y.Int(nil) // truncated toward zero
		frac := new(big.Float).Sub(y, new(big.Float).SetInt(q))
		two := new(big.Float).Mul(frac, big.NewFloat(2))
		one := big.NewFloat(1)
		if c := new(big.Float).Abs(two).Cmp(one); c > 0 || c == 0 && q.Bit(0) == 1 {
			q.Add(q, big.NewInt(int64(two.Sign())))
		}
		if q.CmpAbs(limit) > 0 {
			q.Set(limit)
			if y.Sign() < 0 {
				q.Neg(q)
			}
		}
		acc := new(big.Int).Lsh(big.NewInt(hi[i]), 64)
		acc.Add(acc, big.NewInt(int64(lo[i])))
		acc.Add(acc, q)
		acc.Mod(acc, mod) // two's complement
		l := int64(new(big.Int).And(acc, new(big.Int).SetUint64(math.MaxUint64)).Uint64())
		acc.Sub(acc, big.NewInt(l)) // a multiple of 2⁶⁴
		lo[i], hi[i] = uint64(l), int64(new(big.Int).Rsh(acc, 64).Uint64())
	}
}

// TestAddQuantized: addQuantized (the AVX-512 kernel where the processor
// has one, then the Go loop on the tail) gives, bit for bit, the exact
// oracle's 128-bit integers, and so does the Go loop alone; at clip
// scales 2^62 and 2^40, with and without a clipping factor, at lengths
// that leave tails. Negative controls: rounding ties away from zero or
// ignoring the overflow of the low word changes the result on these inputs.
func TestAddQuantized(t *testing.T) {
	if !useAVX512 {
		t.Log("no AVX-512 here: addQuantized is the Go loop")
	}
	for _, c := range []struct {
		n, e int
		f    float32
	}{{4096, 62, 1}, {4096 + 13, 62, 0.7}, {1000 + 7, 40, 1}, {15, 62, 0.3}, {32, 10, 1}} {
		lo, hi, x := quantCase(c.n, c.e, uint64(c.n))
		s1, s2 := scales(c.e)
		wlo, whi := slices.Clone(lo), slices.Clone(hi)
		quantOracle(wlo, whi, x, c.f, c.e)
		glo, ghi := slices.Clone(lo), slices.Clone(hi)
		addQuantizedGo(glo, ghi, x, c.f, s1, s2)
		klo, khi := slices.Clone(lo), slices.Clone(hi)
		addQuantized(klo, khi, x, c.f, s1, s2)
		for i := range x {
			if glo[i] != wlo[i] || ghi[i] != whi[i] {
				t.Fatalf("n=%d e=%d: Go loop, coordinate %d (x = %g): (%d, %d), oracle (%d, %d)", c.n, c.e, i, x[i], ghi[i], glo[i], whi[i], wlo[i])
			}
			if klo[i] != wlo[i] || khi[i] != whi[i] {
				t.Fatalf("n=%d e=%d: addQuantized, coordinate %d (x = %g): (%d, %d), oracle (%d, %d)", c.n, c.e, i, x[i], khi[i], klo[i], whi[i], wlo[i])
			}
		}

		// Controls: variants that a weaker test would not tell apart.
		away, nocarry := 0, 0
		for i, v := range x {
			y := float64(v*c.f) * s1 * s2
			a, b := max(min(math.Round(y), quantLimit), -quantLimit), max(min(math.RoundToEven(y), quantLimit), -quantLimit)
			if a != b {
				away++
			}
			if hi[i] != khi[i] {
				nocarry++
			}
		}
		if c.n >= 1000 && (away == 0 || nocarry == 0) {
			t.Errorf("n=%d e=%d: %d coordinates tell ties away from zero apart, %d tell an ignored overflow apart: want both > 0", c.n, c.e, away, nocarry)
		}
	}
}
