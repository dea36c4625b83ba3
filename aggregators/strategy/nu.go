package strategy

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"dpfl/participation"
)

func init() {
	Register(Builder{Name: "nu", Order: 9, Memory: denseMemory(6), Build: func(_ context.Context, cfg Config) (Strategy, error) { return buildNu(cfg) }})
}

func buildNu(cfg Config) (Strategy, error) {
	n := cfg.Workload.N()
	nu, tuned := cfg.Nu, cfg.Nu < 0
	if tuned {
		nu = TuneNu(n, 0.0005)
	}
	if !(nu < 1) {
		return nil, fmt.Errorf("strategy: nu %v outside [0,1)", nu)
	}
	var s *Nu
	if cfg.NuBands > 0 {
		s = NewNuBanded(n, nu, cfg.NuBands)
	} else {
		s = NewNu(n, nu)
	}
	s.tuned = tuned
	return s, nil
}

// Nu is ν-DP-FTRL (Choquette-Choo et al. 2024): the lower-triangular
// Toeplitz encoder C with coefficients of (1 − r x)^{−1/2}, r = 1 − ν, and
// C⁻¹ with the coefficients of (1 − r x)^{1/2}: C⁻¹ = Toeplitz(β),
// β_t = β_{t−1}·(t − 3/2)/t·r, C = Toeplitz(c), c_t = c_{t−1}·(t − 1/2)/t·r,
// β_0 = c_0 = 1 (Choquette-Choo et al. 2024, Eq. 7 and 13). ν = 0 is
// the square root C = S^{1/2}.
//
// Truncated (NewNuBanded): C keeps only its first `bands` coefficients, so it
// is a bands-banded lower-triangular Toeplitz matrix and the noise C⁻¹z
// streams by the banded recurrence in O(bands·d) time and memory instead of
// O(t·d). C⁻¹ is then the (dense) Toeplitz matrix of the series inverse of
// the truncated coefficients, and B = A C⁻¹ changes with it: the
// sensitivity and the error of the truncated strategy are those of this
// banded C, computed exactly like any other strategy's (under b-min-sep
// with bands ≤ b or not, ToeplitzSensitivity is exact). Truncation
// lowers the sensitivity (fewer coefficients in each column) and raises
// ‖B‖_F (the anti-correlation of the noise is cut off). Prefix sums, single
// participation, n = 256, ν = 0.003: loss 6207 with 8 bands, 3853 (16),
// 2626 (32), 2038 (64), 1806 (128), 1765 untruncated (TestNuBanded).
type Nu struct {
	n     int
	nu    float64
	tuned bool // ν was tuned by Build (Config.Nu < 0), not given
	bands int  // number of coefficients of C kept (n: all)
	c, ci []float64
}

var (
	_ Strategy      = (*Nu)(nil)
	_ Analyzed      = (*Nu)(nil)
	_ Banded        = (*Nu)(nil)
	_ Parameterized = (*Nu)(nil)
)

// NewNu returns ν-DP-FTRL for n rounds, ν in [0,1).
func NewNu(n int, nu float64) *Nu {
	if n <= 0 {
		panic("strategy: non-positive n")
	}
	if !(nu >= 0 && nu < 1) {
		panic("strategy: nu outside [0,1)")
	}
	c, ci := NuCoefficients(n, nu)
	return &Nu{n: n, nu: nu, bands: n, c: c, ci: ci}
}

// NewNuBanded returns ν-DP-FTRL for n rounds with C truncated to its first
// bands Toeplitz coefficients (bands ≥ n: NewNu).
func NewNuBanded(n int, nu float64, bands int) *Nu {
	s := NewNu(n, nu)
	if bands < 1 {
		panic("strategy: nu needs at least one coefficient")
	}
	if bands >= n {
		return s
	}
	s.bands = bands
	clear(s.c[bands:])
	// Series inverse of the truncated coefficients (c_0 = 1):
	// β_t = −Σ_{1≤j<bands, j≤t} c_j β_{t−j}.
	for t := 1; t < n; t++ {
		v := 0.0
		for j := 1; j <= t && j < bands; j++ {
			v -= s.c[j] * s.ci[t-j]
		}
		s.ci[t] = v
	}
	return s
}

// Bands returns the number of Toeplitz coefficients of C kept (n when not
// truncated).
func (s *Nu) Bands() int { return s.bands }

// NuCoefficients returns the first n Toeplitz coefficients of C
// (c_t = binom(2t,t)/4^t·r^t) and of C⁻¹ (β_t = (−1)^t binom(1/2,t) r^t).
func NuCoefficients(n int, nu float64) (c, cinv []float64) {
	r := 1 - nu
	c = make([]float64, n)
	cinv = make([]float64, n)
	c[0], cinv[0] = 1, 1
	for t := 1; t < n; t++ {
		c[t] = c[t-1] * (float64(t) - 0.5) / float64(t) * r
		cinv[t] = cinv[t-1] * (float64(t) - 1.5) / float64(t) * r
	}
	return c, cinv
}

// String returns "nu", or "nu-bB" when C is truncated to B coefficients.
func (s *Nu) String() string {
	if s.bands < s.n {
		return fmt.Sprintf("nu-b%d", s.bands)
	}
	return "nu"
}

// N returns the number of rounds.
func (s *Nu) N() int { return s.n }

// Nu returns ν.
func (s *Nu) Nu() float64 { return s.nu }

// Parameters reports ν, and whether Build tuned it.
func (s *Nu) Parameters() Parameters {
	nu := s.nu
	return Parameters{Nu: &nu, NuTuned: s.tuned}
}

// Coefficients returns copies of the Toeplitz coefficients of C and C⁻¹
// (first columns; those of the truncated C and its inverse when banded).
func (s *Nu) Coefficients() (c, cinv []float64) {
	return append([]float64(nil), s.c...), append([]float64(nil), s.ci...)
}

func toeplitzLower(n int, col []float64) *mat.TriDense {
	t := mat.NewTriDense(n, mat.Lower, nil)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			t.SetTri(i, j, col[i-j])
		}
	}
	return t
}

// Encoder returns C.
func (s *Nu) Encoder() *mat.Dense {
	var d mat.Dense
	d.CloneFrom(toeplitzLower(s.n, s.c))
	return &d
}

// Gram returns CᵀC.
func (s *Nu) Gram() *mat.SymDense { return gramOf(toeplitzLower(s.n, s.c)) }

// Factor returns C itself (already square lower-triangular).
func (s *Nu) Factor() (*mat.TriDense, error) { return toeplitzLower(s.n, s.c), nil }

// Decoder returns A C⁻¹ with the closed-form C⁻¹.
func (s *Nu) Decoder(w *Workload) (*mat.Dense, error) {
	var b mat.Dense
	b.Mul(w.A(), toeplitzLower(s.n, s.ci))
	return &b, nil
}

// Sensitivity: single participation is the first column's norm; b-min-sep
// is exact by ToeplitzSensitivity (the coefficients, truncated or not, are
// nonnegative and non-increasing); (k,b) goes through SensitivityOf (C ≥ 0,
// so exact; the same value as ToeplitzSensitivity, kept on this path so that
// existing runs' sensitivities stay bit-identical).
func (s *Nu) Sensitivity(p participation.Pattern) (Sensitivity, error) {
	q := clamp(patternOf(p), s.n)
	switch q.shape {
	case once:
		ss := 0.0
		for _, x := range s.c {
			ss += x * x
		}
		return Sensitivity{Value: math.Sqrt(ss), Exact: true, Method: "max column norm"}, nil
	case spaced:
		if sens, ok := ToeplitzSensitivity(s.c, s.n, p); ok {
			return sens, nil
		}
	}
	return SensitivityOf(s.Gram(), p)
}

// Cost: round t needs all past noise vectors, or the last bands−1 when C is
// truncated.
func (s *Nu) Cost() Cost {
	if s.bands < s.n {
		b := float64(s.bands)
		return Cost{Time: b, Memory: b, Note: "truncated Toeplitz C: banded forward substitution, last bands−1 vectors"}
	}
	return Cost{Time: float64(s.n), Memory: float64(s.n), Note: "Toeplitz: Σ_τ β_τ w_{t−τ} over all past rounds"}
}

// NuPrefixLoss returns the single-participation loss of ν-DP-FTRL for
// prefix sums in O(n): (Σ c_t²)·Σ_t (n−t) d_t², d_t = Σ_{τ≤t} β_τ.
func NuPrefixLoss(n int, nu float64) float64 {
	c, ci := NuCoefficients(n, nu)
	s2, f2, d := 0.0, 0.0, 0.0
	for t := 0; t < n; t++ {
		s2 += c[t] * c[t]
		d += ci[t]
		f2 += float64(n-t) * d * d
	}
	return s2 * f2
}

// TuneNu returns the ν on the grid {0, step, 2·step, …} ∩ [0, 0.5] that
// minimizes NuPrefixLoss (Choquette-Choo et al. 2024 §4 tunes ν by the loss). step must be in
// [1e-6, 0.5] (at most half a million points); other values panic.
func TuneNu(n int, step float64) float64 {
	if !(step >= 1e-6 && step <= 0.5) {
		panic(fmt.Sprintf("strategy: TuneNu step %v outside [1e-6, 0.5]", step))
	}
	best, bestNu := math.Inf(1), 0.0
	for i := 0; float64(i)*step <= 0.5; i++ {
		nu := float64(i) * step
		if l := NuPrefixLoss(n, nu); l < best {
			best, bestNu = l, nu
		}
	}
	return bestNu
}
