package strategy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"dpfl/participation"
)

func init() {
	Register(Builder{Name: "identity", Order: 0, Memory: denseMemory(3), Build: func(_ context.Context, cfg Config) (Strategy, error) {
		return NewIdentity(cfg.Workload.N()), nil
	}})
}

// Strategy is a factorization A = B C of a workload, as a mechanism needs
// it: the encoder C (m×n, full column rank) through its Gram matrix and a
// square factor, and its sensitivity. What the comparison and the streaming
// noise generator need besides is in the optional interfaces Analyzed,
// Independent, Banded and PrefixWeighted.
type Strategy interface {
	// N is the number of rounds.
	N() int
	// Gram returns X = CᵀC.
	Gram() *mat.SymDense
	// Factor returns the square lower-triangular C̃ with C̃ᵀC̃ = X
	// (Denisov et al. 2022, Prop. 2.2); the noise C̃⁻¹z has the same law as C⁺z.
	Factor() (*mat.TriDense, error)
	// Sensitivity returns the L2 sensitivity of C under p.
	Sensitivity(p participation.Pattern) (Sensitivity, error)
	// String is the strategy's name, as Build knows it (with its variant,
	// e.g. "nu-b8", "tree-online-restart").
	String() string
}

// Analyzed is implemented by strategies whose error and cost can be
// evaluated (Evaluate, Compare): every strategy of this package.
type Analyzed interface {
	// Encoder returns C (m×n).
	Encoder() *mat.Dense
	// Decoder returns B with B C = A for the workload.
	Decoder(w *Workload) (*mat.Dense, error)
	// Cost returns the per-round cost of generating the noise.
	Cost() Cost
}

// The optional interfaces below say how a strategy's noise streams; a
// strategy with none of them streams C̃⁻¹z through dense weights.

// Independent is implemented by strategies whose noise can be independent
// in every round (C = I: Identity).
type Independent interface {
	// Independent reports whether the rounds' noise is independent.
	Independent() bool
}

// Banded is implemented by strategies whose factor C̃ may be lower-triangular
// with few bands (BandMF, truncated ν-DP-FTRL): their noise streams by a
// recurrence over the last Bands()−1 outputs.
type Banded interface {
	// Bands returns the number of bands of C̃ (N or 0 when dense).
	Bands() int
}

// PrefixWeighted is implemented by the tree strategies: their noise is the
// first differences of their prefix estimator's weights over one latent per
// tree node.
type PrefixWeighted interface {
	// PrefixWeights returns the estimator's weights (rounds × nodes): row
	// t estimates prefix t from the nodes' noise.
	PrefixWeights() (*mat.Dense, error)
}

// Parameterized is implemented by strategies with parameters chosen when
// they are built (ν-DP-FTRL's ν, tuned or given; BLT's buffers), for
// reports.
type Parameterized interface {
	Parameters() Parameters
}

// Parameters are a strategy's own parameters, as reports show them; unset
// fields do not apply.
type Parameters struct {
	Nu      *float64 // ν of ν-DP-FTRL
	NuTuned bool     // ν was tuned (by the prefix-sum loss), not given
	// Theta and Omega are a BLT's buffer decays θ and output scales ω:
	// C = I + Σ_i ω_i · (Toeplitz of θ_i^{t−1}, t ≥ 1).
	Theta, Omega []float64
	// Coefficients are a banded Toeplitz C's leading coefficients.
	Coefficients []float64
}

// String is the parameters in one line ("" when there are none), e.g.
// "ν = 0.0135 (tuned)".
func (p Parameters) String() string {
	return p.Format(func(v []float64, _ string) string { return floatList(v) })
}

// Format is String with each list of values written by list, which is told
// what the list is: "theta" (the BLT decays, one per buffer), "omega" (the
// BLT output scales) or "coefficients" (Toeplitz).
func (p Parameters) Format(list func(v []float64, what string) string) string {
	var parts []string
	if p.Nu != nil {
		s := fmt.Sprintf("ν = %g", *p.Nu)
		if p.NuTuned {
			s += " (tuned)"
		}
		parts = append(parts, s)
	}
	if len(p.Theta) > 0 {
		parts = append(parts, fmt.Sprintf("θ = %s, ω = %s", list(p.Theta, "theta"), list(p.Omega, "omega")))
	}
	if len(p.Coefficients) > 0 {
		parts = append(parts, "c = "+list(p.Coefficients, "coefficients"))
	}
	return strings.Join(parts, ", ")
}

func floatList(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.6g", x)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// Cost is the per-round cost of streaming the noise, in units of the model
// dimension d (e.g. Time = 3 means about 3·d floating-point multiply-adds,
// Memory = 3 means 3 vectors of length d kept between rounds).
type Cost struct {
	Time   float64 // worst round
	Memory float64
	Note   string
}

// Status reports what an optimizer did.
type Status struct {
	Method     string // "fixed point", "L-BFGS", "closed form"
	Iterations int    // major iterations
	Evals      int    // objective evaluations
	// Gap is the relative duality gap (primal − dual bound)/primal: the
	// fixed point's, or the certificate's for L-BFGS (certificate.go); NaN
	// when there is no bound. The optimum is within Gap (relative) of the
	// returned strategy's tr(AᵀA X⁻¹).
	Gap      float64
	GradNorm float64 // final projected-gradient norm (L-BFGS, rescaled variables), or NaN
	// Lower is the certified lower bound on the optimal tr(AᵀA X⁻¹) (L-BFGS
	// certificates; NaN or 0 otherwise) and KKT the relative KKT residual
	// (projected gradient over ‖X⁻¹AᵀAX⁻¹‖_F).
	Lower, KKT float64
	Certified  bool // Lower, KKT and Gap are an L-BFGS certificate
	Converged  bool
	Message    string
	Cached     bool // loaded from the disk cache
}

// Optimized is implemented by strategies produced by an optimizer.
type Optimized interface {
	Status() Status
}

// Metrics are a strategy's error figures for a workload and schema (σ = 1,
// clip 1).
type Metrics struct {
	Strategy      string
	N             int
	Participation string
	Sensitivity   Sensitivity
	// SingleSensitivity is the sensitivity under single participation,
	// sqrt(max_j X_jj), for the "sens single" column of Choquette-Choo et al. 2023 Table 2.
	SingleSensitivity float64
	FrobB2            float64 // ‖B‖²_F
	Loss              float64 // sens²·‖B‖²_F: total expected squared error
	RMSE              float64 // sqrt(Loss/n)
	MaxRoundStd       float64 // sens·max_t ‖B_t,:‖: std of the worst round's error
	Residual          float64 // ‖B C − A‖_F / ‖A‖_F
	// ResidualEstimated: Residual is a randomized estimate for the factor
	// Y of X = YᵀY (factoredMetrics), C not formed.
	ResidualEstimated bool
	Cost              Cost
	Parameters        Parameters // the strategy's own (Parameterized), if any
}

// Evaluate computes the decoder of s for w and its error metrics under p;
// s must implement Analyzed.
func Evaluate(s Strategy, w *Workload, p participation.Pattern) (Metrics, error) {
	return evaluate(context.Background(), s, w, p)
}

// EvaluateContext is Evaluate, returning ctx's error as soon as ctx is done
// (see withContext); the metrics are Evaluate's, bit for bit.
func EvaluateContext(ctx context.Context, s Strategy, w *Workload, p participation.Pattern) (Metrics, error) {
	return withContext(ctx, func() (Metrics, error) { return evaluate(ctx, s, w, p) })
}

// decoderContext is implemented by strategies whose decoder is one long
// dense product, computed by mulContext.
type decoderContext interface {
	decoderContext(ctx context.Context, w *Workload) (*mat.Dense, error)
}

func evaluate(ctx context.Context, s Strategy, w *Workload, p participation.Pattern) (Metrics, error) {
	if s.N() != w.N() {
		panic("strategy: strategy and workload sizes differ")
	}
	if f, ok := s.(*Factorization); ok && isOnce(p) {
		if m, ok := f.factoredMetrics(w); ok {
			return m, nil
		}
	}
	a, ok := s.(Analyzed)
	if !ok {
		return Metrics{}, fmt.Errorf("strategy: %s cannot be evaluated (no encoder and decoder)", s)
	}
	sens, err := s.Sensitivity(p)
	if err != nil {
		return Metrics{}, err
	}
	single, err := s.Sensitivity(participation.AtMostOnce)
	if err != nil {
		return Metrics{}, err
	}
	if err := ctx.Err(); err != nil {
		return Metrics{}, err
	}
	var b *mat.Dense
	if dc, ok := s.(decoderContext); ok {
		b, err = dc.decoderContext(ctx, w)
	} else {
		b, err = a.Decoder(w)
	}
	if err != nil {
		return Metrics{}, err
	}
	if err := ctx.Err(); err != nil {
		return Metrics{}, err
	}
	n := s.N()
	fro2, worst := 0.0, 0.0
	for i := 0; i < n; i++ {
		r := 0.0
		for _, x := range b.RawRowView(i) {
			r += x * x
		}
		fro2 += r
		worst = math.Max(worst, r)
	}
	bc, err := mulContext(ctx, b, a.Encoder())
	if err != nil {
		return Metrics{}, err
	}
	bc.Sub(bc, w.A())
	res := mat.Norm(bc, 2) / mat.Norm(w.A(), 2)
	loss := sens.Value * sens.Value * fro2
	if math.IsInf(loss, 0) || math.IsNaN(loss) {
		return Metrics{}, fmt.Errorf("strategy: %s: the loss sens²·‖B‖²_F = %v·%v is not a finite float64 (workload entries too large?)", s, sens.Value*sens.Value, fro2)
	}
	var params Parameters
	if ps, ok := s.(Parameterized); ok {
		params = ps.Parameters()
	}
	return Metrics{
		Strategy:          s.String(),
		N:                 n,
		Participation:     p.String(),
		Sensitivity:       sens,
		SingleSensitivity: single.Value,
		FrobB2:            fro2,
		Loss:              loss,
		RMSE:              math.Sqrt(loss / float64(n)),
		MaxRoundStd:       sens.Value * math.Sqrt(worst),
		Residual:          res,
		Cost:              a.Cost(),
		Parameters:        params,
	}, nil
}

// LowerFactor returns the lower-triangular C̃ with C̃ᵀC̃ = X by the
// exchange-matrix Cholesky: with J the anti-identity, L = chol(J X J),
// C̃ = J Lᵀ J.
func LowerFactor(X mat.Symmetric) (*mat.TriDense, error) {
	n := X.SymmetricDim()
	jxj := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			jxj.SetSym(i, j, X.At(n-1-i, n-1-j))
		}
	}
	var ch mat.Cholesky
	if ok := ch.Factorize(jxj); !ok {
		return nil, errors.New("strategy: Gram matrix is not positive definite")
	}
	var l mat.TriDense
	ch.LTo(&l)
	c := mat.NewTriDense(n, mat.Lower, nil)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			c.SetTri(i, j, l.At(n-1-j, n-1-i))
		}
	}
	return c, nil
}

// solveRight returns A·C⁻¹ for a square lower-triangular C.
func solveRight(w *Workload, c *mat.TriDense) *mat.Dense {
	n := w.N()
	b := mat.NewDense(n, n, nil)
	b.Copy(w.A())
	blas64.Trsm(blas.Right, blas.NoTrans, 1, c.RawTriangular(), b.RawMatrix())
	return b
}

// gramOf returns CᵀC.
func gramOf(c mat.Matrix) *mat.SymDense { return atb(c, c) }

// atb returns Aᵀ B for AᵀB known to be symmetric (e.g. CᵀC), through the
// parallel Dgemm: gonum's Dsyrk is serial and about 3x slower at n = 2048.
func atb(a, b mat.Matrix) *mat.SymDense {
	_, n := a.Dims()
	// Dense operands, so that Mul reaches Dgemm (a TriDense would take the
	// generic element-by-element path).
	dense := func(m mat.Matrix) *mat.Dense {
		if d, ok := m.(*mat.Dense); ok {
			return d
		}
		var d mat.Dense
		d.CloneFrom(m)
		return &d
	}
	ad := dense(a)
	if b == a {
		return gramUpper(ad)
	}
	bd := dense(b)
	var d mat.Dense
	d.Mul(ad.T(), bd)
	x := mat.NewSymDense(n, nil)
	raw, xr := d.RawMatrix(), x.RawSymmetric()
	for i := 0; i < n; i++ {
		copy(xr.Data[i*xr.Stride+i:i*xr.Stride+n], raw.Data[i*raw.Stride+i:i*raw.Stride+n])
	}
	return x
}

// gramBlock is the column-block size of gramUpper.
const gramBlock = 512

// gramUpper returns AᵀA computing only the blocks on and above the
// diagonal (half the multiply-adds of the full product), each by the
// parallel Dgemm over the whole inner dimension: every entry is summed in
// the order the full product sums it, so the result is bit-identical to it
// (TestGramUpperBitIdentical).
func gramUpper(a *mat.Dense) *mat.SymDense {
	m, n := a.Dims()
	x := mat.NewSymDense(n, nil)
	xr := x.RawSymmetric()
	var blk mat.Dense
	for i0 := 0; i0 < n; i0 += gramBlock {
		i1 := min(i0+gramBlock, n)
		ai := a.Slice(0, m, i0, i1)
		for j0 := i0; j0 < n; j0 += gramBlock {
			j1 := min(j0+gramBlock, n)
			blk.Reset()
			blk.Mul(ai.T(), a.Slice(0, m, j0, j1))
			br := blk.RawMatrix()
			for i := i0; i < i1; i++ {
				lo := max(i, j0)
				copy(xr.Data[i*xr.Stride+lo:i*xr.Stride+j1], br.Data[(i-i0)*br.Stride+lo-j0:(i-i0)*br.Stride+j1-j0])
			}
		}
	}
	return x
}

// Identity is C = I (DP-SGD / DP-FedAvg), B = A.
type Identity struct{ n int }

// NewIdentity returns the identity strategy for n rounds.
func NewIdentity(n int) Identity {
	if n <= 0 {
		panic("strategy: non-positive n")
	}
	return Identity{n}
}

var (
	_ Strategy    = Identity{}
	_ Analyzed    = Identity{}
	_ Independent = Identity{}
)

// Independent reports true: C = I adds independent noise in every round.
func (Identity) Independent() bool { return true }

// String returns "identity".
func (Identity) String() string { return "identity" }

// N returns the number of rounds.
func (s Identity) N() int { return s.n }

// Encoder returns I.
func (s Identity) Encoder() *mat.Dense {
	c := mat.NewDense(s.n, s.n, nil)
	for i := 0; i < s.n; i++ {
		c.Set(i, i, 1)
	}
	return c
}

// Gram returns I.
func (s Identity) Gram() *mat.SymDense {
	x := mat.NewSymDense(s.n, nil)
	for i := 0; i < s.n; i++ {
		x.SetSym(i, i, 1)
	}
	return x
}

// Factor returns I.
func (s Identity) Factor() (*mat.TriDense, error) {
	c := mat.NewTriDense(s.n, mat.Lower, nil)
	for i := 0; i < s.n; i++ {
		c.SetTri(i, i, 1)
	}
	return c, nil
}

// Decoder returns A.
func (s Identity) Decoder(w *Workload) (*mat.Dense, error) {
	b := mat.NewDense(s.n, s.n, nil)
	b.Copy(w.A())
	return b, nil
}

// Sensitivity returns sqrt(k̂) (1 under single participation), exact.
func (s Identity) Sensitivity(p participation.Pattern) (Sensitivity, error) {
	check(p)
	return Sensitivity{Value: math.Sqrt(float64(p.MaxIn(s.n))), Exact: true, Method: "identity: sqrt(max participations) (exact)"}, nil
}

// Cost is one fresh Gaussian vector per round.
func (s Identity) Cost() Cost { return Cost{Time: 1, Memory: 1, Note: "independent noise"} }
