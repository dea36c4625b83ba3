package strategy

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"dpfl/participation"
)

func init() {
	Register(Builder{Name: "toeplitz", Order: 11, Memory: denseMemory(6), Build: func(ctx context.Context, cfg Config) (Strategy, error) {
		b := cfg.Bands
		if b == 0 {
			if isOnce(cfg.Participation) {
				return nil, errors.New("strategy: toeplitz under single participation needs a band count")
			}
			b = DefaultBands(cfg.Participation.Separation(), cfg.Workload.N())
		}
		return OptimizeBandedToeplitz(ctx, cfg.Workload, b, cfg.Participation, cfg.LBFGS)
	}})
}

// BandedToeplitz is a lower-triangular Toeplitz encoder C with b̂ bands:
// first column (c_0, …, c_{b̂−1}, 0, …), as jax_privacy's banded Toeplitz
// strategies. Its noise C⁻¹z streams by the banded recurrence (Banded) over
// the last b̂−1 outputs; its sensitivity is exact under single
// participation, and under (k,b) and b-min-sep when b̂ ≤ b or the
// coefficients are nonnegative and non-increasing (ToeplitzSensitivity).
// OptimizeBandedToeplitz chooses the coefficients.
type BandedToeplitz struct {
	n      int
	c, ci  []float64 // Toeplitz coefficients of C (length n, zero past the bands) and C⁻¹
	bands  int
	status *Status
}

var (
	_ Strategy      = (*BandedToeplitz)(nil)
	_ Analyzed      = (*BandedToeplitz)(nil)
	_ Banded        = (*BandedToeplitz)(nil)
	_ Parameterized = (*BandedToeplitz)(nil)
	_ Optimized     = (*BandedToeplitz)(nil)
)

// NewBandedToeplitz returns the strategy with the given leading coefficients
// of C's first column (c_0 ≠ 0, finite) for n rounds.
func NewBandedToeplitz(n int, coef []float64) (*BandedToeplitz, error) {
	if n < 1 || len(coef) < 1 || len(coef) > n {
		return nil, fmt.Errorf("strategy: banded Toeplitz with %d coefficients for %d rounds", len(coef), n)
	}
	for i, x := range coef {
		if math.IsNaN(x) || math.IsInf(x, 0) || (i == 0 && x == 0) {
			return nil, fmt.Errorf("strategy: banded Toeplitz coefficient %d is %v", i, x)
		}
	}
	s := &BandedToeplitz{n: n, bands: len(coef), c: make([]float64, n)}
	copy(s.c, coef)
	s.ci = toeplitzInverse(s.c, s.bands)
	return s, nil
}

// toeplitzInverse returns the coefficients of C⁻¹ for C with first column c
// (nonzero only in its first bands entries).
func toeplitzInverse(c []float64, bands int) []float64 {
	n := len(c)
	x := make([]float64, n)
	x[0] = 1 / c[0]
	for t := 1; t < n; t++ {
		v := 0.0
		for j := 1; j < bands && j <= t; j++ {
			v -= c[j] * x[t-j]
		}
		x[t] = v / c[0]
	}
	return x
}

// String returns "toeplitz-bB".
func (s *BandedToeplitz) String() string { return fmt.Sprintf("toeplitz-b%d", s.bands) }

// N returns the number of rounds.
func (s *BandedToeplitz) N() int { return s.n }

// Bands returns b̂.
func (s *BandedToeplitz) Bands() int { return s.bands }

// Parameters reports the coefficients of C.
func (s *BandedToeplitz) Parameters() Parameters {
	return Parameters{Coefficients: append([]float64(nil), s.c[:s.bands]...)}
}

// Status reports the optimizer's result.
func (s *BandedToeplitz) Status() Status {
	if s.status == nil {
		return Status{Method: "given coefficients", Gap: math.NaN(), GradNorm: math.NaN(), Converged: true}
	}
	return *s.status
}

// Encoder returns C.
func (s *BandedToeplitz) Encoder() *mat.Dense {
	var d mat.Dense
	d.CloneFrom(toeplitzLower(s.n, s.c))
	return &d
}

// Gram returns CᵀC.
func (s *BandedToeplitz) Gram() *mat.SymDense { return gramOf(toeplitzLower(s.n, s.c)) }

// Factor returns C.
func (s *BandedToeplitz) Factor() (*mat.TriDense, error) { return toeplitzLower(s.n, s.c), nil }

// Decoder returns A C⁻¹.
func (s *BandedToeplitz) Decoder(w *Workload) (*mat.Dense, error) {
	return toeplitzDecoder(w, s.ci), nil
}

func (s *BandedToeplitz) decoderContext(ctx context.Context, w *Workload) (*mat.Dense, error) {
	return toeplitzDecoderContext(ctx, w, s.ci)
}

// Sensitivity: ToeplitzSensitivity when exact, else SensitivityOf.
func (s *BandedToeplitz) Sensitivity(p participation.Pattern) (Sensitivity, error) {
	if sens, ok := ToeplitzSensitivity(s.c, s.n, p); ok {
		return sens, nil
	}
	return SensitivityOf(s.Gram(), p)
}

// Cost: the banded recurrence over the last b̂−1 outputs.
func (s *BandedToeplitz) Cost() Cost {
	b := float64(s.bands)
	return Cost{Time: b, Memory: b, Note: "banded Toeplitz C: banded forward substitution, last b̂−1 vectors"}
}

// OptimizeBandedToeplitz returns the b̂-banded Toeplitz C (c_0 = 1; the loss
// does not depend on C's scale) minimizing sens²·‖A C⁻¹‖²_F for a Toeplitz
// workload under p, by L-BFGS on the logarithm of the loss from the
// truncated square root (ν = 0) coefficients. Under (k,b) and b-min-sep it
// needs b̂ ≤ b, where the sensitivity is exact whatever the signs (the
// objective's sensitivity is then the true one). Not convex: no
// certificate.
func OptimizeBandedToeplitz(ctx context.Context, w *Workload, bands int, p participation.Pattern, opts LBFGSOptions) (*BandedToeplitz, error) {
	n := w.N()
	q := clamp(patternOf(p), n)
	if bands < 1 || bands > n {
		return nil, fmt.Errorf("strategy: bands %d outside [1,%d]", bands, n)
	}
	if q.shape != once && min(q.K, ceilDiv(n, q.B)) > 1 && bands > q.B {
		return nil, fmt.Errorf("strategy: banded Toeplitz under %v needs bands ≤ b (%d > %d) for an exact sensitivity", p, bands, q.B)
	}
	a := w.toeplitzCoefficients()
	if a == nil {
		return nil, fmt.Errorf("strategy: banded Toeplitz optimization needs a Toeplitz workload (prefix sums, or momentum with a constant learning rate); %s is not", w.Name)
	}
	opts.defaults()
	obj := newBLTObjective(w, a, p, 0) // reuses the sensitivity pattern and the workload convolution
	fg := func(z, g []float64) float64 { return obj.bandedToeplitzLogLoss(bands, z, g) }
	nu, _ := NuCoefficients(bands, 0)
	res, err := minimizeLBFGS(ctx, fg, append([]float64(nil), nu[1:]...), opts.Store, opts.MaxIter, opts.RelTol, opts.Progress, false)
	if err != nil {
		return nil, fmt.Errorf("strategy: optimization interrupted: %w", err)
	}
	if math.IsInf(res.f, 1) || math.IsNaN(res.f) {
		return nil, errors.New("strategy: banded Toeplitz optimization found no finite loss")
	}
	coef := append([]float64{1}, res.x...)
	s, err := NewBandedToeplitz(n, coef)
	if err != nil {
		return nil, err
	}
	s.status = &Status{Method: "L-BFGS (Toeplitz coefficients)", Iterations: res.iterations, Evals: res.evals, Gap: math.NaN(), GradNorm: res.gradNorm,
		Converged: res.converged, Message: fmt.Sprintf("%s, loss %.10g (non-convex: no certificate)", res.message, math.Exp(res.f))}
	return s, nil
}

// bandedToeplitzLogLoss returns log(sens²·‖A C⁻¹‖²_F) for the banded
// Toeplitz C with c_0 = 1 and (c_1, …, c_{bands−1}) = z and, if g is not
// nil, its gradient in z.
func (o *bltObjective) bandedToeplitzLogLoss(bands int, z, g []float64) float64 {
	n := o.n
	c := make([]float64, n)
	c[0] = 1
	copy(c[1:bands], z)
	x := toeplitzInverse(c, bands)
	s2, e := o.evalCoefficients(c, x, g != nil)
	f := math.Log(s2 * e)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return math.Inf(1)
	}
	if g == nil {
		return f
	}
	// T(c)x = e_0, so dx = −T(c)⁻¹T(dc)x: with y = T(c)^{-T} ∂log e/∂x,
	// ∂log e/∂c_j = −Σ_t y_t x_{t−j}.
	y := make([]float64, n)
	for t := n - 1; t >= 0; t-- {
		v := o.gx[t]
		for j := 1; j < bands && t+j < n; j++ {
			v -= c[j] * y[t+j]
		}
		y[t] = v
	}
	for j := 1; j < bands; j++ {
		v := 0.0
		for t := j; t < n; t++ {
			v += y[t] * x[t-j]
		}
		g[j-1] = o.gc[j] - v
	}
	return f
}
