package strategy

import (
	"context"
	"math"

	"gonum.org/v1/gonum/mat"

	"dpfl/participation"
)

// Sensitivity of lower-triangular Toeplitz encoders C (ν-DP-FTRL, BLT),
// given by their first column c (C_ij = c_{i−j}, i ≥ j).
//
// When c is nonnegative and non-increasing (c_0 ≥ c_1 ≥ … ≥ 0), the worst
// participation pattern under b-min-sep (at most k participations) and under
// (k,b)-participation is π* = {0, b, 2b, …, (k̂−1)b}, k̂ = min(k, ⌈n/b⌉):
// C ≥ 0 makes the supremum over unit-norm rows collinear, so sens² =
// max_π 1ᵀX_ππ1 = max_π Σ_{i,j∈π} ⟨C e_i, C e_j⟩ (Choquette-Choo et al. 2023, Eq. 5), and
// for columns i < j the inner product Σ_{t<n−j} c_t c_{t+j−i} does not
// increase when j−i grows (c non-increasing) nor when j grows (fewer
// nonnegative terms). Every pattern has at most k̂ elements whose a-th and
// c-th differ by at least |a−c|·b and start at 0 or later, so each term of
// its sum is at most the matching term of π*, which is itself a pattern of
// both schemas. Hence sens² = ‖C·1_π*‖², computed in O(n·k̂) without
// forming X (McMahan et al. 2024, "Hassle-free", Thm 2; jax_privacy
// toeplitz.minsep_sensitivity_squared). The tests check it against brute
// force over all patterns on small n.
//
// The same pattern is worst, whatever the signs, when at most one
// participation counts (single participation, or k̂ = 1) or when C has at
// most b bands (c_t = 0 for t ≥ b): the columns of a pattern then have
// disjoint supports, sens² = Σ_{i∈π} ‖C e_i‖², and the column norms do not
// increase with i (truncation at n).
//
// Otherwise no exact method is known here: callers fall back to
// SensitivityOf on the Gram matrix (Choquette-Choo et al. 2023 Thm 3 upper bound under min-sep).

// toeplitzMonotone reports whether c is nonnegative and non-increasing.
func toeplitzMonotone(c []float64) bool {
	for t, x := range c {
		if !(x >= 0) || math.IsInf(x, 0) || (t > 0 && x > c[t-1]) {
			return false
		}
	}
	return true
}

// ToeplitzSensitivity returns the exact sensitivity under p of the n×n
// lower-triangular Toeplitz C whose first column starts with c (missing
// entries are 0, entries past n are ignored), and true, when c is
// nonnegative and non-increasing, when at most one participation counts, or
// when c has at most b nonzero leading coefficients; otherwise the zero
// Sensitivity and false.
func ToeplitzSensitivity(c []float64, n int, p participation.Pattern) (Sensitivity, bool) {
	q := patternOf(p)
	if n < 1 {
		panic("strategy: non-positive n")
	}
	if len(c) > n {
		c = c[:n]
	}
	for _, x := range c {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return Sensitivity{}, false
		}
	}
	q = clamp(q, n)
	k, b := 1, n
	if q.shape != once {
		k, b = q.K, q.B
	}
	k = min(k, ceilDiv(n, b))
	support := len(c)
	for support > 0 && c[support-1] == 0 {
		support--
	}
	method := "max column norm"
	switch {
	case k == 1:
	case toeplitzMonotone(c):
		method = "Toeplitz C>=0 non-increasing: pattern {0,b,...} (exact)"
	case support <= b:
		method = "Toeplitz C with at most b bands: pattern {0,b,...} (exact)"
	default:
		return Sensitivity{}, false
	}
	ss := 0.0
	// Row t of C·1_π* is Σ_{a<k, ab≤t} c_{t−ab}.
	for t := 0; t < n; t++ {
		v := 0.0
		for a := 0; a < k && a*b <= t; a++ {
			if j := t - a*b; j < len(c) {
				v += c[j]
			}
		}
		ss += v * v
	}
	return Sensitivity{Value: math.Sqrt(ss), Exact: true, Method: method}, true
}

// toeplitzDecoder returns A·T(ci) for the lower-triangular Toeplitz C⁻¹ with
// first column ci, through dense operands (the parallel Dgemm; triangular
// operands take gonum's element-by-element path).
func toeplitzDecoder(w *Workload, ci []float64) *mat.Dense {
	b, _ := toeplitzDecoderContext(context.Background(), w, ci)
	return b
}

// toeplitzDecoderContext is toeplitzDecoder by mulContext (the same bits),
// or ctx's error.
func toeplitzDecoderContext(ctx context.Context, w *Workload, ci []float64) (*mat.Dense, error) {
	n := len(ci)
	t := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		row := t.RawRowView(i)
		for j := 0; j <= i; j++ {
			row[j] = ci[i-j]
		}
	}
	var a mat.Dense
	a.CloneFrom(w.A())
	return mulContext(ctx, &a, t)
}
