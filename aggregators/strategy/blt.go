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
	Register(Builder{Name: "blt", Order: 10, Memory: denseMemory(6), Build: buildBLT})
}

// BLTDefaultMaxBuffers caps the default number of BLT buffers (Config.Buffers
// 0): BandMF's memory b̂ − 1 when that is small, else this.
const BLTDefaultMaxBuffers = 8

// BLTMaxBuffers is the most buffers OptimizeBLT takes: it optimizes every
// count from 1 up, each over 2m parameters, so its work grows at least as
// m², and the prefix-sum loss stops improving after a few buffers (1,000
// rounds: 9301.2558 from 8 to 64 buffers).
const BLTMaxBuffers = 64

// BLTBuffers is the number of buffers Build gives a BLT for cfg (see
// Config.Buffers), or an error.
func BLTBuffers(cfg Config) (int, error) {
	if cfg.Buffers < 0 {
		return 0, fmt.Errorf("strategy: blt needs buffers ≥ 1, got %d", cfg.Buffers)
	}
	if cfg.Buffers > BLTMaxBuffers {
		return 0, fmt.Errorf("strategy: blt takes at most %d buffers, got %d", BLTMaxBuffers, cfg.Buffers)
	}
	if cfg.Buffers > 0 {
		return cfg.Buffers, nil
	}
	b := cfg.Bands
	if b == 0 {
		if isOnce(cfg.Participation) {
			return 0, errors.New("strategy: blt under single participation needs a buffer count (or bands, whose BandMF memory it matches)")
		}
		b = DefaultBands(cfg.Participation.Separation(), cfg.Workload.N())
	}
	return DefaultBLTBuffers(b), nil
}

// DefaultBLTBuffers is the number of BLT buffers for b̂ bands when none is
// given: BandMF's noise memory b̂ − 1, at least 1, at most
// BLTDefaultMaxBuffers.
func DefaultBLTBuffers(bands int) int { return min(max(bands-1, 1), BLTDefaultMaxBuffers) }

func buildBLT(ctx context.Context, cfg Config) (Strategy, error) {
	m, err := BLTBuffers(cfg)
	if err != nil {
		return nil, err
	}
	return OptimizeBLT(ctx, cfg.Workload, m, cfg.Participation, cfg.LBFGS)
}

// BLT is a buffered linear Toeplitz strategy (Dvijotham et al. 2024;
// McMahan et al. 2024, "Hassle-free"): the lower-triangular Toeplitz C with
// c_0 = 1 and c_t = Σ_i ω_i θ_i^{t−1} (t ≥ 1), given by m buffers with
// decays θ and output scales ω. C⁻¹ is again lower-triangular Toeplitz, and
// the noise w = C⁻¹z streams with m buffers S_i of the model's dimension:
//
//	w_t = z_t − Σ_i ω_i S_i,   then S_i ← θ_i S_i + w_t,
//
// in O(m·d) memory and time per round (aggregators.BLTNoise), whatever n.
// With θ ∈ [0,1), ω ≥ 0 and Σω ≤ 1 its coefficients are nonnegative and
// non-increasing, so its sensitivity under single, (k,b) and b-min-sep
// participation is exact (ToeplitzSensitivity); OptimizeBLT stays in that
// set. Other parameters fall back to SensitivityOf (the Thm 3 bound under
// min-sep).
type BLT struct {
	n            int
	theta, omega []float64
	c, ci        []float64 // Toeplitz coefficients of C and C⁻¹
	status       *Status   // nil unless optimized
}

var (
	_ Strategy      = (*BLT)(nil)
	_ Analyzed      = (*BLT)(nil)
	_ Parameterized = (*BLT)(nil)
	_ Buffered      = (*BLT)(nil)
)

// Buffered is implemented by strategies whose noise C⁻¹z streams through a
// few decaying buffers (BLT): w_t = z_t − Σ_i ω_i S_i, S_i ← θ_i S_i + w_t.
type Buffered interface {
	// Buffers returns copies of the decays θ and output scales ω.
	Buffers() (theta, omega []float64)
}

// NewBLT returns the BLT with buffer decays theta and output scales omega
// for n rounds. The parameters must be finite, of equal length, with
// |θ_i| < 1.
func NewBLT(n int, theta, omega []float64) (*BLT, error) {
	if n <= 0 {
		return nil, errors.New("strategy: BLT needs n ≥ 1")
	}
	if len(theta) != len(omega) {
		return nil, fmt.Errorf("strategy: BLT has %d decays and %d output scales", len(theta), len(omega))
	}
	for i := range theta {
		if !(math.Abs(theta[i]) < 1) || math.IsNaN(omega[i]) || math.IsInf(omega[i], 0) {
			return nil, fmt.Errorf("strategy: BLT buffer %d: decay %v (want |θ| < 1), output scale %v (want finite)", i, theta[i], omega[i])
		}
	}
	s := &BLT{n: n, theta: append([]float64(nil), theta...), omega: append([]float64(nil), omega...)}
	s.c, s.ci = bltCoefficients(n, s.theta, s.omega, nil)
	return s, nil
}

// bltCoefficients returns the Toeplitz coefficients of C and of C⁻¹ (the
// streamed response to a unit impulse); if states is not nil (n·m), it
// receives the buffers S_i before round t (states[t*m+i]).
func bltCoefficients(n int, theta, omega, states []float64) (c, ci []float64) {
	m := len(theta)
	c = make([]float64, n)
	ci = make([]float64, n)
	c[0] = 1
	pw := make([]float64, m)
	for i := range pw {
		pw[i] = 1
	}
	for t := 1; t < n; t++ {
		v := 0.0
		for i := range theta {
			v += omega[i] * pw[i]
			pw[i] *= theta[i]
		}
		c[t] = v
	}
	buf := make([]float64, m)
	for t := 0; t < n; t++ {
		x := 0.0
		if t == 0 {
			x = 1
		}
		for i := range buf {
			x -= omega[i] * buf[i]
		}
		if states != nil {
			copy(states[t*m:(t+1)*m], buf)
		}
		ci[t] = x
		for i := range buf {
			buf[i] = theta[i]*buf[i] + x
		}
	}
	return c, ci
}

// Buffers returns copies of θ and ω.
func (s *BLT) Buffers() (theta, omega []float64) {
	return append([]float64(nil), s.theta...), append([]float64(nil), s.omega...)
}

// Coefficients returns copies of the Toeplitz coefficients of C and C⁻¹.
func (s *BLT) Coefficients() (c, cinv []float64) {
	return append([]float64(nil), s.c...), append([]float64(nil), s.ci...)
}

// String returns "blt-mN" (N buffers).
func (s *BLT) String() string { return fmt.Sprintf("blt-m%d", len(s.theta)) }

// N returns the number of rounds.
func (s *BLT) N() int { return s.n }

// Parameters reports θ and ω.
func (s *BLT) Parameters() Parameters {
	t, o := s.Buffers()
	return Parameters{Theta: t, Omega: o}
}

// Status reports the optimizer's result (the zero Status with Method
// "given" when the parameters were given).
func (s *BLT) Status() Status {
	if s.status == nil {
		return Status{Method: "given parameters", Gap: math.NaN(), GradNorm: math.NaN(), Converged: true}
	}
	return *s.status
}

// Encoder returns C.
func (s *BLT) Encoder() *mat.Dense {
	var d mat.Dense
	d.CloneFrom(toeplitzLower(s.n, s.c))
	return &d
}

// Gram returns CᵀC.
func (s *BLT) Gram() *mat.SymDense { return gramOf(toeplitzLower(s.n, s.c)) }

// Factor returns C (square lower-triangular).
func (s *BLT) Factor() (*mat.TriDense, error) { return toeplitzLower(s.n, s.c), nil }

// Decoder returns A C⁻¹.
func (s *BLT) Decoder(w *Workload) (*mat.Dense, error) { return toeplitzDecoder(w, s.ci), nil }

func (s *BLT) decoderContext(ctx context.Context, w *Workload) (*mat.Dense, error) {
	return toeplitzDecoderContext(ctx, w, s.ci)
}

// Sensitivity is exact through ToeplitzSensitivity when the coefficients are
// nonnegative and non-increasing, else SensitivityOf.
func (s *BLT) Sensitivity(p participation.Pattern) (Sensitivity, error) {
	if sens, ok := ToeplitzSensitivity(s.c, s.n, p); ok {
		return sens, nil
	}
	return SensitivityOf(s.Gram(), p)
}

// Cost: m buffers kept, about 2m+1 multiply-adds per coordinate per round
// (read, then decay and add); Memory counts the buffers and the round's
// output, as BandMF's b̂ counts its b̂−1 past outputs and the current one.
func (s *BLT) Cost() Cost {
	m := float64(len(s.theta))
	return Cost{Time: 2*m + 1, Memory: m + 1, Note: "BLT: m decaying buffers, w_t = z_t − Σ ω_i S_i, S_i ← θ_i S_i + w_t"}
}

// toeplitzCoefficients returns a with A_ij = a_{i−j} when the workload is
// Toeplitz (prefix sums; momentum with a constant learning rate), else nil.
func (w *Workload) toeplitzCoefficients() []float64 {
	n := w.N()
	a := make([]float64, n)
	for i := 0; i < n; i++ {
		a[i] = w.a.At(i, 0)
	}
	for i := 1; i < n; i++ {
		for j := 1; j <= i; j++ {
			if w.a.At(i, j) != a[i-j] {
				return nil
			}
		}
	}
	return a
}

// bltObjective evaluates log(sens² · ‖A C⁻¹‖²_F) for a Toeplitz workload
// with coefficients a and its gradient in (θ, ω), for monotone coefficients
// (the exact sensitivity pattern {0, b, …, (k−1)b}).
type bltObjective struct {
	n, k, b int
	a       []float64
	prefix  bool
	m       int
	states  []float64
	v, bb   []float64
	gx, gc  []float64
}

func newBLTObjective(w *Workload, a []float64, p participation.Pattern, m int) *bltObjective {
	n := w.N()
	o := &bltObjective{n: n, a: a, prefix: w.IsPrefix(), m: m, k: 1, b: n}
	if q := clamp(patternOf(p), n); q.shape != once {
		o.k, o.b = min(q.K, ceilDiv(n, q.B)), q.B
	}
	o.states = make([]float64, n*m)
	o.v, o.bb, o.gx, o.gc = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	return o
}

// eval returns sens², ‖AC⁻¹‖²_F and, if gt, go are not nil, the gradient of
// log(sens²·‖AC⁻¹‖²_F) in θ and ω.
func (o *bltObjective) eval(theta, omega, gt, gom []float64) (sens2, e float64) {
	n, m := o.n, o.m
	c, x := bltCoefficients(n, theta, omega, o.states)
	sens2, e = o.evalCoefficients(c, x, gt != nil)
	if gt == nil {
		return sens2, e
	}
	for i := 0; i < m; i++ {
		gt[i], gom[i] = 0, 0
	}
	// c_j = Σ_i ω_i θ_i^{j−1}: ∂/∂ω_i = θ_i^{j−1}, ∂/∂θ_i = ω_i (j−1) θ_i^{j−2}.
	for i := 0; i < m; i++ {
		pw, pwm := 1.0, 0.0 // θ^{j−1}, θ^{j−2}
		for j := 1; j < n; j++ {
			gom[i] += o.gc[j] * pw
			gt[i] += o.gc[j] * omega[i] * float64(j-1) * pwm
			pwm = pw
			pw *= theta[i]
		}
	}
	// Adjoint of the inverse recursion x_t = δ_t − Σ ω_i S_{i,t},
	// S_{i,t+1} = θ_i S_{i,t} + x_t: λ_{i,t} = ∂/∂S_{i,t}.
	lam := make([]float64, m) // λ_{·,t+1}
	for t := n - 1; t >= 0; t-- {
		xb := o.gx[t]
		for i := 0; i < m; i++ {
			xb += lam[i]
		}
		st := o.states[t*m : (t+1)*m]
		for i := 0; i < m; i++ {
			gt[i] += lam[i] * st[i]
			gom[i] -= xb * st[i]
			lam[i] = theta[i]*lam[i] - omega[i]*xb
		}
	}
	return sens2, e
}

// evalCoefficients returns sens² (pattern {0, b, …}) and ‖A C⁻¹‖²_F for the
// Toeplitz coefficients c of C and x of C⁻¹ and, if grad, fills o.gc with
// ∂log sens²/∂c and o.gx with ∂log ‖A C⁻¹‖²_F/∂x.
func (o *bltObjective) evalCoefficients(c, x []float64, grad bool) (sens2, e float64) {
	n := o.n
	// sens² = ‖v‖², v_t = Σ_{a<k, ab≤t} c_{t−ab}.
	for t := 0; t < n; t++ {
		s := 0.0
		for q := 0; q < o.k && q*o.b <= t; q++ {
			s += c[t-q*o.b]
		}
		o.v[t] = s
		sens2 += s * s
	}
	// B = A·T(x) is Toeplitz with first column bb = a * x; ‖B‖² = Σ (n−t) bb_t².
	for t := 0; t < n; t++ {
		s := 0.0
		if o.prefix {
			if t > 0 {
				s = o.bb[t-1]
			}
			s += x[t]
		} else {
			for j := 0; j <= t; j++ {
				s += o.a[t-j] * x[j]
			}
		}
		o.bb[t] = s
		e += float64(n-t) * s * s
	}
	if !grad {
		return sens2, e
	}
	// ∂ log F = ∂sens²/sens² + ∂e/e.
	// ∂e/∂x_s = Σ_{t≥s} 2(n−t) bb_t a_{t−s}.
	if o.prefix {
		acc := 0.0
		for s := n - 1; s >= 0; s-- {
			acc += 2 * float64(n-s) * o.bb[s]
			o.gx[s] = acc / e
		}
	} else {
		for s := 0; s < n; s++ {
			acc := 0.0
			for t := s; t < n; t++ {
				acc += 2 * float64(n-t) * o.bb[t] * o.a[t-s]
			}
			o.gx[s] = acc / e
		}
	}
	// ∂sens²/∂c_j = 2 Σ_q v_{j+qb}.
	for j := 0; j < n; j++ {
		s := 0.0
		for q := 0; q < o.k && j+q*o.b < n; q++ {
			s += o.v[j+q*o.b]
		}
		o.gc[j] = 2 * s / sens2
	}
	return sens2, e
}

// bltParams maps unconstrained u (decays) and v (scales) to θ = sigmoid(u)
// ∈ (0,1) and ω_i = e^{v_i}/(1 + Σ_j e^{v_j}) (ω > 0, Σω < 1): the set where
// the coefficients are positive and decreasing and the sensitivity exact.
func bltParams(z, theta, omega []float64) {
	m := len(theta)
	mx := 0.0
	for i := 0; i < m; i++ {
		theta[i] = 1 / (1 + math.Exp(-z[i]))
		mx = math.Max(mx, z[m+i])
	}
	den := math.Exp(-mx)
	for i := 0; i < m; i++ {
		omega[i] = math.Exp(z[m+i] - mx)
		den += omega[i]
	}
	for i := range omega {
		omega[i] /= den
	}
}

// bltClampDecays sets every decay that bltParams rounded to 1 to the
// largest float64 below 1, so that |θ| < 1 (NewBLT); it reports whether it
// changed any.
func bltClampDecays(theta []float64) bool {
	changed := false
	for i, th := range theta {
		if th >= 1 {
			theta[i], changed = math.Nextafter(1, 0), true
		}
	}
	return changed
}

// bltStart is a starting point: 1/sqrt(πt) ≈ c_t as a sum of exponentials,
// θ_i = e^{−s_i} with s_i log-spaced on [lo, hi], ω_i ∝ h·sqrt(s_i)e^{−s_i}/π,
// scaled so that Σω = 1/2 (= c_1 of the square root).
func bltStart(m int, lo, hi float64) []float64 {
	z := make([]float64, 2*m)
	h := 0.0
	if m > 1 {
		h = math.Log(hi/lo) / float64(m-1)
	}
	om := make([]float64, m)
	sum := 0.0
	for i := 0; i < m; i++ {
		s := lo * math.Exp(h*float64(i))
		if m == 1 {
			s = math.Sqrt(lo * hi)
		}
		th := math.Exp(-s)
		z[i] = math.Log(th / (1 - th))
		om[i] = math.Sqrt(s) * math.Exp(-s)
		sum += om[i]
	}
	// ω_i = e^{v_i}/(1+Σe^v) with Σω = 1/2: e^{v_i} = ω_i/(1 − 1/2).
	for i := 0; i < m; i++ {
		w := 0.5 * om[i] / sum
		z[m+i] = math.Log(w / 0.5)
	}
	return z
}

// OptimizeBLT returns the BLT with m buffers that minimizes sens²·‖A C⁻¹‖²_F
// for a Toeplitz workload (prefix sums; momentum with a constant learning
// rate) under p, over θ ∈ (0,1)^m, ω > 0, Σω < 1 (so that the sensitivity is
// exact, see BLT), by L-BFGS on the logarithm of the loss from a few
// starting points (sums of exponentials approximating the square root's
// coefficients over different ranges of decay rates, and the optimum with
// m−1 buffers plus a small new one, so that the loss does not increase with
// m); the best is kept. m is at most BLTMaxBuffers.
// The problem is not convex: no certificate, the status says so.
func OptimizeBLT(ctx context.Context, w *Workload, m int, p participation.Pattern, opts LBFGSOptions) (*BLT, error) {
	n := w.N()
	if m < 1 || m > BLTMaxBuffers {
		return nil, fmt.Errorf("strategy: BLT needs 1 to %d buffers, got %d", BLTMaxBuffers, m)
	}
	check(p)
	a := w.toeplitzCoefficients()
	if a == nil {
		return nil, fmt.Errorf("strategy: BLT optimization needs a Toeplitz workload (prefix sums, or momentum with a constant learning rate); %s is not", w.Name)
	}
	opts.defaults()
	var grown []float64 // the best with m−1 buffers, for a start with one more
	if m > 1 {
		prev, err := OptimizeBLT(ctx, w, m-1, p, opts)
		if err != nil {
			return nil, err
		}
		grown = make([]float64, 0, 2*m)
		for _, th := range prev.theta {
			grown = append(grown, math.Log(th/(1-th)))
		}
		grown = append(grown, 0) // θ = 1/2
		// ω unchanged, the new buffer's tiny: e^{v} = ω/(1 − Σω).
		rest := 1.0
		for _, om := range prev.omega {
			rest -= om
		}
		for _, om := range prev.omega {
			grown = append(grown, math.Log(om/rest))
		}
		grown = append(grown, math.Log(1e-3/rest))
	}
	obj := newBLTObjective(w, a, p, m)
	theta, omega := make([]float64, m), make([]float64, m)
	gt, gom := make([]float64, m), make([]float64, m)
	fg := func(z, g []float64) float64 {
		bltParams(z, theta, omega)
		if g == nil {
			s2, e := obj.eval(theta, omega, nil, nil)
			return math.Log(s2 * e)
		}
		s2, e := obj.eval(theta, omega, gt, gom)
		f := math.Log(s2 * e)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return math.Inf(1)
		}
		sumw := 0.0
		for i := 0; i < m; i++ {
			sumw += gom[i] * omega[i]
		}
		for i := 0; i < m; i++ {
			g[i] = gt[i] * theta[i] * (1 - theta[i])
			g[m+i] = omega[i] * (gom[i] - sumw)
		}
		return f
	}
	best := lbfgsResult{f: math.Inf(1)}
	tries := 0
	starts := [][]float64{bltStart(m, 1/float64(n), 2), bltStart(m, 0.1/float64(n), 1), bltStart(m, 1/float64(n), 0.2)}
	if grown != nil {
		starts = append(starts, grown)
	}
	for _, z0 := range starts {
		res, err := minimizeLBFGS(ctx, fg, z0, opts.Store, opts.MaxIter, opts.RelTol, opts.Progress, false)
		if err != nil {
			return nil, fmt.Errorf("strategy: optimization interrupted: %w", err)
		}
		tries++
		if res.f < best.f {
			best = res
		}
	}
	if math.IsInf(best.f, 1) {
		return nil, errors.New("strategy: BLT optimization found no finite loss")
	}
	bltParams(best.x, theta, omega)
	if bltClampDecays(theta) {
		// A decay's logit went past 36.7, where the sigmoid rounds to
		// 1: the optimum wants a buffer that never decays. The largest
		// float64 below 1 is that limit inside the open set; the loss is
		// evaluated again at the point returned.
		s2, e := obj.eval(theta, omega, nil, nil)
		best.f = math.Log(s2 * e)
	}
	s, err := NewBLT(n, theta, omega)
	if err != nil {
		return nil, err
	}
	s.status = &Status{Method: "L-BFGS (BLT parameters)", Iterations: best.iterations, Evals: best.evals, Gap: math.NaN(), GradNorm: best.gradNorm,
		Converged: best.converged, Message: fmt.Sprintf("%s, loss %.10g (best of %d starts; non-convex: no certificate)", best.message, math.Exp(best.f), tries)}
	return s, nil
}
