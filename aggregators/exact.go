package aggregators

import (
	"fmt"
	"math"
	"math/bits"
)

// wide is a two's-complement 128-bit integer: hi·2⁶⁴ + lo.
type wide struct {
	lo uint64
	hi int64
}

// add64 adds the 64-bit integer q (sign-extended).
func (w *wide) add64(q int64) {
	var c uint64
	w.lo, c = bits.Add64(w.lo, uint64(q), 0)
	w.hi += int64(c) + q>>63
}

// add adds o (modulo 2¹²⁸, so in any order).
func (w *wide) add(o wide) {
	var c uint64
	w.lo, c = bits.Add64(w.lo, o.lo, 0)
	w.hi += o.hi + int64(c)
}

// float64 returns w correctly rounded to a float64 (to nearest, ties to
// even): a function of the integer alone, whatever sums produced it.
func (w wide) float64() float64 {
	if w.hi == int64(w.lo)>>63 { // fits in an int64
		return float64(int64(w.lo))
	}
	neg := w.hi < 0
	hi, lo := uint64(w.hi), w.lo
	if neg { // magnitude: two's complement negation
		lo = -lo
		hi = ^hi
		if lo == 0 {
			hi++
		}
	}
	// hi > 0 here: keep the top 64 bits, the ones below as a sticky bit
	// (bit 0 lies below the float64's rounding position, so or-ing the
	// sticky bit into it rounds as if all bits were kept).
	n := bits.Len64(hi)
	top := hi<<(64-n) | lo>>n
	if lo<<(64-n) != 0 {
		top |= 1
	}
	f := math.Ldexp(float64(top), n)
	if neg {
		return -f
	}
	return f
}

// scales returns s1, s2 with s1·s2 = 2^e, each a float64 power of two
// (|e| ≤ 2046), so that x·s1·s2 is x·2^e rounded at most once.
func scales(e int) (float64, float64) {
	h := e / 2
	return math.Ldexp(1, h), math.Ldexp(1, e-h)
}

// Exact is an order-free sum of real numbers: each term is rounded to a
// multiple of the unit 2^exp (saturating at ±2⁹⁵ units) and the integers
// are summed exactly in 128 bits, so any split into parts and any order of
// Add and Merge give the same bits (no overflow below 2³² terms).
// Non-finite terms are counted apart (Float64 is then NaN). The zero value
// is an empty sum in units of 2⁻⁶⁰; NewExact chooses the unit.
type Exact struct {
	rel int // the unit is 2^(lossExp+rel)
	w   wide
	bad int64 // non-finite terms
}

// lossExp is the zero value's unit: 2⁻⁶⁰, so that a float64 term of
// magnitude at least 2⁻⁸ is held exactly.
const lossExp = -60

// NewExact returns an empty sum whose terms are rounded to multiples of
// 2^exp.
func NewExact(exp int) Exact { return Exact{rel: exp - lossExp} }

// exp returns the unit's exponent.
func (s *Exact) exp() int { return lossExp + s.rel }

// Add adds x rounded to the sum's unit.
func (s *Exact) Add(x float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		s.bad++
		return
	}
	s.w.add(quantizeWide(x, s.exp()))
}

// quantizeWide returns x·2^-exp rounded to the nearest integer (ties to
// even), saturated at ±2⁹⁵.
func quantizeWide(x float64, exp int) wide {
	s1, s2 := scales(-exp)
	v := math.RoundToEven(x * s1 * s2)
	if math.Abs(v) < 0x1p63 {
		q := int64(v)
		return wide{lo: uint64(q), hi: q >> 63}
	}
	v = max(min(v, 0x1p95), -0x1p95)
	hi := math.Floor(v / 0x1p64)
	lo := v - hi*0x1p64 // in [0, 2⁶⁴), exact: v is an integer of 53 bits
	return wide{lo: uint64(lo), hi: int64(hi)}
}

// Merge adds the sum o, of the same unit.
func (s *Exact) Merge(o Exact) error {
	if o.rel != s.rel {
		return fmt.Errorf("aggregators: cannot merge a sum in units of 2^%d into one in units of 2^%d", o.exp(), s.exp())
	}
	s.w.add(o.w)
	s.bad += o.bad
	return nil
}

// Float64 returns the sum rounded to a float64 (NaN when a term was not
// finite): a function of the exact integer sum alone.
func (s Exact) Float64() float64 {
	if s.bad > 0 {
		return math.NaN()
	}
	s1, s2 := scales(s.exp())
	return s.w.float64() * s1 * s2
}

// Words returns the sum's state as 128-bit integers (lo, hi word pairs:
// the sum and the count of non-finite terms), for transports that add
// integers (SetWords after an element-wise 128-bit sum of several sums'
// words is their Merge).
func (s Exact) Words() [4]uint64 {
	return [4]uint64{s.w.lo, uint64(s.w.hi), uint64(s.bad), uint64(s.bad >> 63)}
}

// SetWords sets the sum's state from Words (the unit is kept).
func (s *Exact) SetWords(w [4]uint64) {
	s.w = wide{lo: w[0], hi: int64(w[1])}
	s.bad = int64(w[2])
}
