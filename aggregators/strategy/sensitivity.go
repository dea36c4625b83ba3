package strategy

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"dpfl/participation"
)

// Sensitivity is computed for a participation.Pattern (what the participations
// of one client can be; a schema's Pattern) of one of three shapes: at most one participation;
// (k,b) turns (patterns {i, i+b, …, i+(k−1)b} ∩ [0,n), 0 ≤ i < b); and b-min-sep
// (at most k participations, consecutive ones at least b rounds apart). The
// sampled schemas are accounted by amplification instead.

// shape is the form of a participation pattern.
type shape int

const (
	once   shape = iota // at most one participation
	turns               // (k,b): at most K participations in {i, i+B, …}
	spaced              // B-min-sep: at most K, consecutive ones at least B apart
)

// pattern is a participation pattern sensitivity is computed for.
type pattern struct {
	shape shape
	K, B  int
}

// patternOf returns the pattern of p; it panics unless sensitivity is
// defined for it.
func patternOf(p participation.Pattern) pattern {
	pt := p
	switch {
	case pt.Sampled() || pt.Unbounded():
		panic(fmt.Sprintf("strategy: no sensitivity for participation %s (want single, kb or minsep)", p))
	case pt.Once():
		return pattern{shape: once}
	}
	q := pattern{shape: spaced, K: pt.MaxParticipations, B: pt.Separation()}
	if q.K < 1 || q.B < 1 {
		panic("strategy: participation needs K ≥ 1 and B ≥ 1")
	}
	if pt.Groups > 0 {
		q.shape = turns
	}
	return q
}

// HasSensitivity reports whether sensitivity is defined for p: at most one
// participation, groups taking turns or a minimum separation, with no
// sampling (a sampled pattern is accounted by amplification instead).
func HasSensitivity(p participation.Pattern) bool {
	return !p.Sampled() && !p.Unbounded() && (p.Once() || p.MaxParticipations >= 1 && p.Separation() >= 1)
}

// check panics unless p is a pattern sensitivity is defined for.
func check(p participation.Pattern) { patternOf(p) }

// isOnce reports whether p allows at most one participation.
func isOnce(p participation.Pattern) bool {
	return p.Once()
}

// ceilDiv is ⌈a/b⌉ for a ≥ 0 and b ≥ 1, without overflow.
func ceilDiv(a, b int) int {
	if a <= 0 {
		return 0
	}
	return (a-1)/b + 1
}

// clamp returns the participation with K and B reduced to what n rounds can
// realize: at most ⌈n/B⌉ participations, and separations of at most n
// (which already allow only one). The sensitivity is unchanged; the sizes
// of the computations (loops over k and b, buffers of n+b) stay within n
// whatever K and B are.
func clamp(q pattern, n int) pattern {
	if q.shape == once || n < 1 {
		return q
	}
	q.K = min(q.K, ceilDiv(n, q.B))
	q.B = min(q.B, n)
	return q
}

// Sensitivity is the L2 sensitivity of G ↦ C G for rows of norm at most 1.
type Sensitivity struct {
	Value  float64 // L2 sensitivity for unit-norm rows (clip = 1)
	Exact  bool    // false when it is an upper bound
	Method string  // how it was computed
}

// zeroTol is the relative tolerance (of max |X_ii|) below which an entry of X
// counts as zero (band and orthogonality detection) or as nonnegative.
const zeroTol = 1e-12

// SensitivityOf returns the sensitivity of any C with Gram matrix X = CᵀC
// under p (Choquette-Choo et al. 2023, Eq. 2 and 5; the package
// documentation):
//   - Single: sqrt(max_j X_jj), exact.
//   - KB: exact when every pattern's block X_ππ is diagonal (banded or
//     column-orthogonal strategies) or X ≥ 0 elementwise (1ᵀX_ππ1); otherwise
//     the Prop. E.1 upper bound max_π Σ_{i,j∈π} |X_ij|.
//   - MinSep: exact VecSens(diag X) when X is B-banded; otherwise the Thm 3
//     upper bound VecSens(u), u_i = VecSens(|X_i,:|); exact for X ≥ 0
//     non-increasing along rows and diagonals (monotoneGram: the optimal
//     single-participation MF for prefix sums). Toeplitz strategies
//     with nonnegative non-increasing coefficients (ν-DP-FTRL, BLT) are exact
//     through ToeplitzSensitivity instead; for dense X ≥ 0 (multi-epoch MF)
//     no exact method is known and the bound stays, Exact false.
func SensitivityOf(X *mat.SymDense, p participation.Pattern) (Sensitivity, error) {
	n := X.SymmetricDim()
	q := clamp(patternOf(p), n)
	diag := make([]float64, n)
	maxd := 0.0
	for i := range diag {
		diag[i] = X.At(i, i)
		if !(diag[i] >= 0) || math.IsInf(diag[i], 0) {
			return Sensitivity{}, errors.New("strategy: Gram matrix has a negative or non-finite diagonal")
		}
		maxd = math.Max(maxd, diag[i])
	}
	tol := zeroTol * maxd
	switch q.shape {
	case once:
		return Sensitivity{Value: math.Sqrt(maxd), Exact: true, Method: "max column norm"}, nil
	case turns:
		diagonalBlocks, nonneg := true, true
		best, bound := 0.0, 0.0
		for i := 0; i < q.B && i < n; i++ {
			s, sa := 0.0, 0.0
			for a := 0; a < q.K && i+a*q.B < n; a++ {
				for c := 0; c < q.K && i+c*q.B < n; c++ {
					x := X.At(i+a*q.B, i+c*q.B)
					if a != c && math.Abs(x) > tol {
						diagonalBlocks = false
					}
					if x < -tol {
						nonneg = false
					}
					s += x
					sa += math.Abs(x)
				}
			}
			best = math.Max(best, s)
			bound = math.Max(bound, sa)
		}
		switch {
		case diagonalBlocks:
			// X_ππ diagonal ⇒ sup tr(DᵀX_ππD) = Σ_{i∈π} X_ii = Σ|X_ij| over π.
			return Sensitivity{Value: math.Sqrt(bound), Exact: true, Method: "(k,b) patterns, diagonal blocks (exact)"}, nil
		case nonneg:
			return Sensitivity{Value: math.Sqrt(best), Exact: true, Method: "(k,b) patterns, X>=0 (exact)"}, nil
		default:
			return Sensitivity{Value: math.Sqrt(bound), Exact: false, Method: "Prop. E.1 upper bound"}, nil
		}
	case spaced:
		if Bandwidth(X, tol) <= q.B {
			return Sensitivity{Value: math.Sqrt(VecSens(diag, q.K, q.B)), Exact: true, Method: "banded VecSens (exact)"}, nil
		}
		if monotoneGram(X) {
			// Every pattern's terms are bounded termwise by those of
			// {0, b, …, (k̂−1)b} (see monotoneGram).
			k := min(q.K, ceilDiv(n, q.B))
			s := 0.0
			for a := 0; a < k; a++ {
				for c := 0; c < k; c++ {
					s += X.At(a*q.B, c*q.B)
				}
			}
			return Sensitivity{Value: math.Sqrt(s), Exact: true, Method: "X>=0 non-increasing along rows and diagonals: pattern {0,b,...} (exact)"}, nil
		}
		return Sensitivity{Value: math.Sqrt(thm3Bound(X, q)), Exact: false, Method: "Thm 3 upper bound"}, nil
	}
	panic("unreachable")
}

// thm3Bound is Choquette-Choo et al. 2023 Thm 3's upper bound on the squared b-min-sep
// sensitivity: VecSens(u), u_i = VecSens(|X_i,:|).
func thm3Bound(X *mat.SymDense, q pattern) float64 {
	n := X.SymmetricDim()
	u := make([]float64, n)
	row := make([]float64, n)
	for i := range u {
		for j := range row {
			row[j] = math.Abs(X.At(i, j))
		}
		u[i] = VecSens(row, q.K, q.B)
	}
	return VecSens(u, q.K, q.B)
}

// monotoneGram reports whether X ≥ 0 and X_{i,i+g} does not increase with
// i (for each g ≥ 0) nor with g (for each i), exactly as stored. Then the
// b-min-sep sensitivity is exact with the pattern π* = {0, b, …, (k̂−1)b}:
// X ≥ 0 makes sens² = max_π Σ_{a,c∈π} X_{p_a p_c}, and a pattern
// p_0 < … < p_{m−1} (m ≤ k̂) has p_a ≥ ab and p_c − p_a ≥ (c−a)b, so
// X_{p_a p_c} ≤ X_{ab, ab+(p_c−p_a)} ≤ X_{ab, cb} term by term (the same
// argument as ToeplitzSensitivity). The optimal single-participation X for
// prefix sums has this form (TestMonotoneGramSensitivity).
func monotoneGram(X *mat.SymDense) bool {
	n := X.SymmetricDim()
	raw := X.RawSymmetric() // upper triangle: X_{i,j}, j ≥ i, at i*Stride+j
	for i := 0; i < n; i++ {
		row := raw.Data[i*raw.Stride : i*raw.Stride+n]
		var next []float64
		if i+1 < n {
			next = raw.Data[(i+1)*raw.Stride : (i+1)*raw.Stride+n]
		}
		for j := i; j < n; j++ {
			v := row[j]
			if !(v >= 0) || (j+1 < n && row[j+1] > v) || (next != nil && j+1 < n && next[j+1] > v) {
				return false
			}
		}
	}
	return true
}

// Bandwidth returns the number of bands of X: 1 + max |i−j| over entries with
// |X_ij| > tol (1 for a diagonal matrix, 0 for the zero matrix).
func Bandwidth(X mat.Symmetric, tol float64) int {
	n := X.SymmetricDim()
	bw := 0
	for i := 0; i < n; i++ {
		for j := 0; j <= i-bw; j++ {
			if math.Abs(X.At(i, j)) > tol {
				bw = i - j + 1
				break
			}
		}
	}
	return bw
}

// VecSens returns max_π Σ_{i∈π} v_i over sets π of at most k indices whose
// consecutive elements differ by at least b (Choquette-Choo et al. 2023 Alg. 3), for v ≥ 0, in
// O(len(v)·k) time.
func VecSens(v []float64, k, b int) float64 {
	if k < 0 || b < 1 {
		panic("strategy: VecSens needs k ≥ 0 and b ≥ 1")
	}
	n := len(v)
	// Indices of [0,n) differ by less than n: b > n allows what b = n does,
	// and no pattern has more than ⌈n/b⌉ elements.
	b = min(b, max(n, 1))
	k = min(k, ceilDiv(n, b))
	// f[j][i] = best with j participations among indices ≥ i.
	prev := make([]float64, n+b+1) // j-1
	cur := make([]float64, n+b+1)
	for j := 1; j <= k; j++ {
		for i := range cur {
			cur[i] = 0
		}
		for i := n - 1; i >= 0; i-- {
			cur[i] = math.Max(cur[i+1], v[i]+prev[i+b])
		}
		prev, cur = cur, prev
	}
	return prev[0]
}
