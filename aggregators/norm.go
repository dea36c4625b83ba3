package aggregators

import "math"

// laneSumSquares returns Σ float64(x[i])² summed in 32 lanes: lane j adds
// the squares of x[j], x[j+32], … in order, and the lanes are then added
// pairwise (lane j += lane j+16, then j+8, j+4, j+2, j+1). The squares of
// float32 values are exact in float64, so only the sums round. The same
// bits on every machine (the AVX-512 kernel keeps the lanes in registers).
func laneSumSquares(x []float32) float64 {
	var l [32]float64
	m := 0
	if useAVX512 {
		m = len(x) &^ 31
		if m > 0 {
			sumSquaresAVX512(&l, x[:m])
		}
	}
	for i := m; i < len(x); i++ {
		v := float64(x[i])
		l[i&31] += v * v
	}
	for w := 16; w > 0; w /= 2 {
		for j := range w {
			l[j] += l[j+w]
		}
	}
	return l[0]
}

// clipFactor returns what ClipL2(x, clip) decides, without changing x:
// whether x is clipped (its in-order norm norm2(x) exceeds clip) and the
// factor f = float32(clip/norm2(x)) it is then scaled by (1 otherwise),
// bit for bit; and norm, x's L2 norm from laneSumSquares (non-finite if
// and only if norm2(x) is).
//
// The in-order sum of squares is a chain of dependent additions, slow on
// long updates. Both sums are within γ·S of the exact sum S of the squares,
// γ = (len(x)+6)·2⁻⁵³/(1 − (len(x)+6)·2⁻⁵³) (recursive summation of
// non-negative terms; at most len(x)+5 additions reach any square in
// laneSumSquares), so the in-order sum lies in s·(1 ± 4·(len(x)+8)·2⁻⁵³)
// around the lane sum s, the margin covering the rounding of the interval's
// ends. The comparison with clip and the factor are monotone in the sum:
// when they agree at both ends of the interval, they are the in-order
// sum's; otherwise (a norm within about len(x)·10⁻¹⁶ of the clip, or a
// factor at a float32 rounding boundary) the in-order norm is computed.
func clipFactor(x []float32, clip float64) (f float32, clipped bool, norm float64) {
	f, clipped, norm, ok := clipFactorLanes(x, clip)
	if ok {
		return f, clipped, norm
	}
	if n := norm2(x); n > clip {
		return float32(clip / n), true, norm
	}
	return 1, false, norm
}

// clipFactorLanes is clipFactor from the lane sum alone: ok is false when
// the interval does not decide (clipFactor then computes the in-order norm).
func clipFactorLanes(x []float32, clip float64) (f float32, clipped bool, norm float64, ok bool) {
	s := laneSumSquares(x)
	norm = math.Sqrt(s)
	if math.IsNaN(norm) || math.IsInf(norm, 0) { // a non-finite coordinate
		return 1, false, norm, true
	}
	d := 4 * float64(len(x)+8) * 0x1p-53
	lo, hi := math.Sqrt(s*(1-d)), math.Sqrt(s*(1+d))
	if cl := lo > clip; cl == (hi > clip) {
		if !cl {
			return 1, false, norm, true
		}
		if fl := float32(clip / lo); fl == float32(clip/hi) {
			return fl, true, norm, true
		}
	}
	return 0, false, norm, false
}
