package strategy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

func init() {
	multiEpoch := func(n, b float64) float64 { // b: the participation's b (MemoryBytes' bands)
		if meDualShapeF(n, b) {
			return meDualMemory(n)
		}
		return meLBFGSMemory(n)
	}
	for i, name := range []string{"multi-epoch", "multi-epoch-f"} {
		Register(Builder{Name: name, Order: 5 + i, Memory: multiEpoch, Build: func(ctx context.Context, cfg Config) (Strategy, error) {
			return buildMultiEpoch(ctx, name, cfg)
		}})
	}
	bandMem := func(n, b float64) float64 { return 6*(8*n*n) + lbfgsMemory(n*math.Min(math.Max(b, 1), n)) }
	for i, name := range []string{"bandmf", "bandmf-f"} {
		Register(Builder{Name: name, Order: 7 + i, Memory: bandMem, Build: func(ctx context.Context, cfg Config) (Strategy, error) {
			return buildBandMF(ctx, name, cfg)
		}})
	}
}

func buildMultiEpoch(ctx context.Context, name string, cfg Config) (Strategy, error) {
	p := cfg.Participation
	if isOnce(p) {
		return nil, fmt.Errorf("strategy: %s needs kb or minsep participation (use optimal for single)", name)
	}
	if name == "multi-epoch-f" {
		return cfg.Cache.MultiEpochUnequal(ctx, cfg.Workload, p.Separation(), cfg.LBFGS)
	}
	return cfg.Cache.MultiEpoch(ctx, cfg.Workload, p.Separation(), cfg.LBFGS)
}

func buildBandMF(ctx context.Context, name string, cfg Config) (Strategy, error) {
	n, p := cfg.Workload.N(), cfg.Participation
	b := cfg.Bands
	if b == 0 {
		if isOnce(p) {
			return nil, fmt.Errorf("strategy: %s under single participation needs a band count", name)
		}
		b = DefaultBands(p.Separation(), n)
	}
	if b < 1 || b > n {
		return nil, fmt.Errorf("strategy: bands %d outside [1,%d]", b, n)
	}
	if name == "bandmf-f" {
		if isOnce(p) {
			return nil, fmt.Errorf("strategy: bandmf-f needs kb or minsep participation (its diagonal is constrained per (k,b) pattern)")
		}
		if b > p.Separation() {
			return nil, fmt.Errorf("strategy: bandmf-f needs bands ≤ b (%d > %d)", b, p.Separation())
		}
		return cfg.Cache.BandMFUnequal(ctx, cfg.Workload, b, p.Separation(), cfg.LBFGS)
	}
	return cfg.Cache.BandMF(ctx, cfg.Workload, b, cfg.LBFGS)
}

// LBFGSOptions controls BandMF and MultiEpoch.
type LBFGSOptions struct {
	// MaxIter caps the L-BFGS major iterations; 0 means 2000.
	MaxIter int
	// RelTol stops when the loss improved by less than RelTol (relative)
	// over 20 iterations; 0 means 1e-9.
	RelTol float64
	// Store is the L-BFGS history length; 0 means 20.
	Store int
	// Progress, if not nil, is called after each iteration with the loss
	// tr(AᵀA X⁻¹) (not part of the cache key).
	Progress func(iter int, loss float64) `json:"-"`
	// DualProgress, if not nil, is called after each iteration of the
	// multi-epoch dual (medual.go) with the multiplier residual and the
	// dual objective (tr W)²/c of the current multiplier: a lower bound on
	// the optimum for equal column norms; for unequal ones that of the
	// rescaled problem, the bound only at convergence (not part of the
	// cache key).
	DualProgress func(iter int, residual, bound float64) `json:"-"`
	// Start, if not nil, is the starting X of BandMF, MultiEpoch and
	// MultiEpochUnequal; it must be feasible (unit diagonal for BandMF and
	// MultiEpoch; for BandMF only its bands are read; for MultiEpoch
	// X_ij = 0 for i ≠ j, i ≡ j (mod b); positive definite). Cache.MultiEpoch
	// passes the BandMF solution with b bands, Cache.BandMF for a momentum
	// workload the solution without momentum. Not part of the cache key
	// (the cache records the start it uses in its own key).
	Start *mat.SymDense `json:"-"`
}

func (o *LBFGSOptions) defaults() {
	if o.MaxIter == 0 {
		o.MaxIter = 2000
	}
	if o.RelTol == 0 {
		o.RelTol = 1e-9
	}
	if o.Store == 0 {
		o.Store = 20
	}
}

// BandMF optimizes the b̂-banded factorization of Choquette-Choo et al. 2023 Problem 2:
// min tr(AᵀA X⁻¹) over X with unit diagonal and X_ij = 0 for |i−j| ≥ bands,
// with L-BFGS (Armijo backtracking that rejects non-PD iterates),
// warm-started from the column-normalized b̂-banded truncation of the square
// root S^{1/2}, with a diagonal rescaling of the variables (Hessian
// diagonal at the start). C is the lower-triangular b̂-banded factor; under (k,b) and
// b-min-sep with b̂ ≤ b its sensitivity is sqrt(k̂) exactly. This is the
// "equal column norms: T" row of Choquette-Choo et al. 2023 Table 2; BandMFUnequal is the "F" row.
func BandMF(ctx context.Context, w *Workload, bands int, opts LBFGSOptions) (*Factorization, error) {
	n := w.N()
	if bands < 1 || bands > n {
		panic("strategy: bands outside [1,n]")
	}
	p := newBandProblem(w, bands, func(i, j int) bool { return true })
	return p.named("bandmf", ctx, opts)
}

// BandMFUnequal is BandMF without the equal-column-norm constraint (Choquette-Choo et al. 2023
// App. B, the "equal column norms: F" rows of Table 2), for (k,b)-participation
// with k ≥ ⌈n/b⌉ (every round belongs to one pattern {i, i+b, …}): the
// diagonal of X is free subject to Σ_{j≡i (mod b)} X_jj = ⌈n/b⌉ for every
// residue i, the exact (k,b) sensitivity² of a b̂-banded X with b̂ ≤ b
// (Choquette-Choo et al. 2023 Prop. B.1), so the (k,b) sensitivity is sqrt(⌈n/b⌉) as for BandMF.
// The diagonal gradient is projected onto these constraints (zero sum per
// pattern), as in App. B. It needs bands ≤ b. Its b-min-sep sensitivity
// (VecSens of the diagonal, exact) is larger than under (k,b).
func BandMFUnequal(ctx context.Context, w *Workload, bands, b int, opts LBFGSOptions) (*Factorization, error) {
	n := w.N()
	if bands < 1 || bands > n || b < bands {
		panic("strategy: BandMFUnequal needs 1 ≤ bands ≤ min(b, n)")
	}
	p := newBandProblem(w, bands, func(i, j int) bool { return true })
	p.unequal(b)
	return p.named("bandmf-f", ctx, opts)
}

// MultiEpoch optimizes the multi-epoch factorization for (k,b)-participation
// in the equal-column-norm formulation (Choquette-Choo et al. 2023 App. B/C, [15]): min
// tr(AᵀA X⁻¹) over X with unit diagonal and X_ij = 0 whenever i ≠ j and
// i ≡ j (mod b), so that every (k,b) pattern's block of X is the identity and
// the (k,b) sensitivity is exactly sqrt(k̂) for every k. Start: opts.Start
// if set (Cache.MultiEpoch passes BandMF with b bands, a feasible point),
// else the BandMF start with min(b,n) bands. The loss and gradient are
// evaluated densely (Cholesky, inverse, one Gram product: about 2n³
// multiply-adds, DenseBackend). When useMEDual holds (n ≥ 1024, prefix sums
// with or without a schedule, ⌈n/b⌉ ≤ 32) it is solved through its
// Lagrange dual instead (medual.go; opts.Start and opts.RelTol unused),
// which is certified to a relative gap near 1e-10 in seconds at n = 2052.
func MultiEpoch(ctx context.Context, w *Workload, b int, opts LBFGSOptions) (*Factorization, error) {
	if b < 1 {
		panic("strategy: b < 1")
	}
	if useMEDual(w, b) {
		return multiEpochDual(ctx, w, b, false, opts)
	}
	p := newMultiEpochProblem(w, b)
	return p.named("multi-epoch", ctx, opts)
}

// MultiEpochUnequal is MultiEpoch without the equal-column-norm constraint
// (the "Multi-epoch MF, F" row of Choquette-Choo et al. 2023 Table 2): the diagonal is free subject
// to Σ_{j≡i (mod b)} X_jj = ⌈n/b⌉ for every residue i, as in BandMFUnequal;
// the pattern blocks of X stay diagonal, so the (k,b) sensitivity is exactly
// sqrt(⌈n/b⌉) for k ≥ ⌈n/b⌉. It goes through the dual when MultiEpoch does.
func MultiEpochUnequal(ctx context.Context, w *Workload, b int, opts LBFGSOptions) (*Factorization, error) {
	if b < 1 {
		panic("strategy: b < 1")
	}
	if useMEDual(w, b) {
		return multiEpochDual(ctx, w, b, true, opts)
	}
	p := newMultiEpochProblem(w, b)
	p.unequal(b)
	return p.named("multi-epoch-f", ctx, opts)
}

// selMinN is the smallest n at which BandMF evaluates through the selected
// inverse (bandsel.go): O(n·bands²) instead of O(n²·bands) per evaluation,
// 2–5 times faster at n = 2052 (more for fewer bands). Below it one
// evaluation costs milliseconds either way, and solving with the rows of A
// is kept so that the strategies optimized before (the noise of existing
// runs, the strategy cache) stay bit-identical.
const selMinN = 1024

// useSel reports whether a banded problem for w evaluates through the
// selected inverse: n ≥ selMinN and A⁻¹ banded and well conditioned
// (prefix sums, with or without a learning-rate schedule; newSelEval).
func useSel(w *Workload, n int) bool {
	return n >= selMinN && !w.custom && w.Beta == 0
}

// evalTag is the part of the cache key that says which evaluator optimized
// a banded strategy with the given bands (empty for the row solves, as
// before). From parMinRows bands the selected-inversion evaluator splits
// its windows in two and sums their dot products in 16 lanes, which
// changed its bits: "selinv2".
func evalTag(w *Workload, bands int) string {
	switch {
	case !useSel(w, w.N()):
		return ""
	case bands >= parMinRows:
		return "|eval=selinv2"
	}
	return "|eval=selinv"
}

func newMultiEpochProblem(w *Workload, b int) *bandProblem {
	n := w.N()
	p := newBandProblem(w, n, func(i, j int) bool { return (i-j)%b != 0 })
	p.startBands = min(b, n)
	p.dense = true
	return p
}

func (p *bandProblem) named(name string, ctx context.Context, opts LBFGSOptions) (*Factorization, error) {
	f, err := p.solve(ctx, opts)
	if err != nil {
		return nil, err
	}
	f.name = name
	return f, nil
}

// bandProblem is min tr(AᵀA X⁻¹) over the free entries of a bw-banded X with
// unit diagonal, or (after unequal) with a free diagonal whose sums over the
// residue classes mod b are fixed.
type bandProblem struct {
	w          *Workload
	n, bw      int
	free       []int // index into band storage x[i*bw+d] (X_{i,i−d}) of each parameter
	startBands int
	a          []float64 // dense row-major A
	// dense selects the dense evaluator (multi-epoch) instead of banded
	// substitutions.
	dense bool
	// plain keeps lossGrad to one row at a time (no rows4; for tests).
	plain bool
	// selOn: evaluate through the selected inverse of K = A⁻ᵀXA⁻¹
	// (bandsel.go; sel, made on first use) instead of solving with every
	// row of A.
	selOn bool
	sel   *selEval
	// Unequal column norms: parameters len(free)… are t_j, X_jj = t_j −
	// mean_{π(j)} t + target/|π(j)|, with π(j) = {l : l ≡ j (mod mod)}.
	mod    int // 0: unit diagonal
	target float64
	count  []int // |π| per residue
}

// unequal frees the diagonal subject to Σ_{j∈π} X_jj = ⌈n/b⌉ per residue class.
func (p *bandProblem) unequal(b int) {
	p.mod = b
	p.target = float64(ceilDiv(p.n, b))
	p.count = make([]int, min(b, p.n))
	for j := 0; j < p.n; j++ {
		p.count[j%b]++
	}
}

// nParams is the number of optimization variables.
func (p *bandProblem) nParams() int {
	if p.mod > 0 {
		return len(p.free) + p.n
	}
	return len(p.free)
}

func newBandProblem(w *Workload, bw int, free func(i, j int) bool) *bandProblem {
	n := w.N()
	p := &bandProblem{w: w, n: n, bw: bw, startBands: bw}
	for i := 0; i < n; i++ {
		for d := 1; d < bw && d <= i; d++ {
			if free(i, i-d) {
				p.free = append(p.free, i*bw+d)
			}
		}
	}
	p.selOn = useSel(w, n)
	p.a = make([]float64, n*n)
	ar := w.A().RawTriangular()
	for i := 0; i < n; i++ {
		copy(p.a[i*n:i*n+i+1], ar.Data[i*ar.Stride:i*ar.Stride+i+1])
	}
	return p
}

// bandFactor holds C (lower, bw bands, X = CᵀC) in two layouts: by column
// cc[j*bw+d] = C_{j+d,j}; by row rr[j*bw+t] = C_{j,j−bw+1+t}.
type bandFactor struct {
	n, bw  int
	cc, rr []float64
}

// reverseCholesky factors the band-stored X (x[i*bw+d] = X_{i,i−d}) as CᵀC.
func reverseCholesky(x []float64, n, bw int) (*bandFactor, bool) {
	f := &bandFactor{n: n, bw: bw, cc: make([]float64, n*bw), rr: make([]float64, n*bw)}
	cc := f.cc
	for j := n - 1; j >= 0; j-- {
		top := min(n-1, j+bw-1)
		for i := top; i > j; i-- {
			// C_ij = (X_ij − Σ_{k>i} C_ki C_kj) / C_ii.
			s := x[i*bw+(i-j)]
			m := top - i
			if m > 0 {
				s -= blas64.Implementation().Ddot(m, cc[i*bw+1:], 1, cc[j*bw+(i-j)+1:], 1)
			}
			cc[j*bw+(i-j)] = s / cc[i*bw]
		}
		s := x[j*bw]
		if m := top - j; m > 0 {
			s -= blas64.Implementation().Ddot(m, cc[j*bw+1:], 1, cc[j*bw+1:], 1)
		}
		if !(s > 0) {
			return nil, false
		}
		cc[j*bw] = math.Sqrt(s)
	}
	for j := 0; j < n; j++ {
		for d := 0; d < bw && j+d < n; d++ {
			i := j + d
			f.rr[i*bw+bw-1-d] = cc[j*bw+d]
		}
	}
	return f, true
}

// bandChunk is the number of rows (a multiple of four) whose z vectors
// lossGrad keeps for one bandGram pass.
const bandChunk = 64

// lossGrad returns tr(AᵀA X⁻¹) = ‖A C⁻¹‖²_F and, if g != nil, accumulates
// G = (A X⁻¹)ᵀ(A X⁻¹) on the band into g (g[i*bw+t] = G_{i,i−bw+1+t}).
func (p *bandProblem) lossGrad(f *bandFactor, g []float64) float64 {
	workers := min(runtime.GOMAXPROCS(0), 2)
	// Static interleaved partition of the rows and a fixed reduction order:
	// the result does not depend on scheduling (reproducible optimizations).
	var wg sync.WaitGroup
	totals := make([]float64, workers)
	grads := make([][]float64, workers)
	for wk := 0; wk < workers; wk++ {
		wg.Add(1)
		go func(wk int) {
			defer wg.Done()
			totals[wk], grads[wk] = p.lossGradRows(f, g != nil, wk, workers)
		}(wk)
	}
	wg.Wait()
	total := 0.0
	for wk := range totals {
		total += totals[wk]
		if g != nil {
			for i, v := range grads[wk] {
				g[i] += v
			}
		}
	}
	return total
}

// lossGradRows is worker wk of workers in lossGrad: it runs over rows
// n−1−wk, n−1−wk−workers, … and returns their part of the loss and, if
// grad, of G on the band (nil otherwise).
func (p *bandProblem) lossGradRows(f *bandFactor, grad bool, wk, workers int) (loc float64, lg []float64) {
	n, bw := p.n, p.bw
	impl := blas64.Implementation()
	y := make([]float64, n)
	z := make([]float64, n)
	if grad {
		lg = make([]float64, n*bw)
	}
	r := n - 1 - wk
	if useAVX2 && bw > 1 && !p.plain {
		// Four rows at a time (rows4), G updated once per chunk
		// of bandChunk rows (bandGram): bit-identical.
		var ys [4][]float64
		for q := range ys {
			ys[q] = make([]float64, n)
		}
		var zbuf []float64
		zs := make([][]float64, 0, bandChunk)
		if grad {
			zbuf = make([]float64, bandChunk*n)
		}
		for r-3*workers >= 0 {
			zs = zs[:0]
			for len(zs) < bandChunk && r-3*workers >= 0 {
				var z4 *[4][]float64
				if grad {
					k := len(zs)
					z4 = &[4][]float64{zbuf[k*n : (k+1)*n], zbuf[(k+1)*n : (k+2)*n], zbuf[(k+2)*n : (k+3)*n], zbuf[(k+3)*n : (k+4)*n]}
					zs = append(zs, z4[:]...)
				} else {
					zs = append(zs, nil, nil, nil, nil)
				}
				loc = p.rows4(f, [4]int{r, r - workers, r - 2*workers, r - 3*workers}, &ys, z4, loc)
				r -= 4 * workers
			}
			if grad {
				p.bandGram(lg, zs)
			}
		}
	}
	for ; r >= 0; r -= workers {
		a := p.a[r*n : r*n+r+1]
		// y C = a, y_j = (a_j − Σ_{d≥1} y_{j+d} C_{j+d,j}) / C_jj.
		for j := range y {
			y[j] = 0
		}
		for j := r; j >= 0; j-- {
			m := min(r, j+bw-1) - j
			s := a[j]
			if m > 0 {
				s -= impl.Ddot(m, y[j+1:], 1, f.cc[j*bw+1:], 1)
			}
			y[j] = s / f.cc[j*bw]
			loc += float64(y[j] * y[j]) // float64: never fused (any GOAMD64), as rows4
		}
		if !grad {
			continue
		}
		// z Cᵀ = y: z_j = (y_j − Σ_{i<j} C_ji z_i) / C_jj.
		for j := 0; j < n; j++ {
			off := max(0, bw-1-j)
			s := y[j]
			if m := bw - 1 - off; m > 0 {
				s -= impl.Ddot(m, f.rr[j*bw+off:], 1, z[j-bw+1+off:], 1)
			}
			z[j] = s / f.rr[j*bw+bw-1]
		}
		// G_{i,i−bw+1+t} += z_i z_{i−bw+1+t}.
		for i := 0; i < n; i++ {
			off := max(0, bw-1-i)
			if m := bw - 1 - off; m > 0 && z[i] != 0 {
				impl.Daxpy(m, z[i], z[i-bw+1+off:], 1, lg[i*bw+off:], 1)
			}
			lg[i*bw+bw-1] += float64(z[i] * z[i]) // diagonal G_ii (for scaling)
		}
	}
	return loc, lg
}

// xFromParams fills the band storage of X from the parameters.
func (p *bandProblem) xFromParams(x, theta []float64) {
	for i := range x {
		x[i] = 0
	}
	nf := len(p.free)
	for k, idx := range p.free {
		x[idx] = theta[k]
	}
	if p.mod == 0 {
		for i := 0; i < p.n; i++ {
			x[i*p.bw] = 1
		}
		return
	}
	t := theta[nf:]
	mean := make([]float64, len(p.count))
	for j, v := range t {
		mean[j%p.mod] += v
	}
	for r := range mean {
		mean[r] = (p.target - mean[r]) / float64(p.count[r])
	}
	for j, v := range t {
		x[j*p.bw] = v + mean[j%p.mod]
	}
}

// gradFromG maps G = X⁻¹AᵀAX⁻¹ (band storage gb[i*bw+bw−1−d] = G_{i,i−d})
// to the gradient of tr(AᵀA X⁻¹) in the parameters: −2G_ij for a free pair,
// −(G_jj − mean_{π(j)} G) for a diagonal parameter (projected gradient).
func (p *bandProblem) gradFromG(gr, gb []float64) {
	bw := p.bw
	for k, idx := range p.free {
		i, d := idx/bw, idx%bw
		gr[k] = -2 * gb[i*bw+bw-1-d]
	}
	if p.mod == 0 {
		return
	}
	gd := gr[len(p.free):]
	mean := make([]float64, len(p.count))
	for j := range gd {
		gd[j] = -gb[j*bw+bw-1]
		mean[j%p.mod] += gd[j]
	}
	for j := range gd {
		gd[j] -= mean[j%p.mod] / float64(p.count[j%p.mod])
	}
}

// hessDiag returns an estimate of the Hessian's diagonal in the parameters
// (up to a common factor 2) from G at the start: G_ii + G_jj for a pair,
// G_jj for a diagonal entry (exact at X = I).
func (p *bandProblem) hessDiag(gb []float64) []float64 {
	bw := p.bw
	h := make([]float64, p.nParams())
	for k, idx := range p.free {
		i, d := idx/bw, idx%bw
		h[k] = gb[i*bw+bw-1] + gb[(i-d)*bw+bw-1]
	}
	for j := len(p.free); j < len(h); j++ {
		i := j - len(p.free)
		h[j] = gb[i*bw+bw-1]
	}
	return h
}

// start returns the initial parameters: from opts.Start if given (its
// entries on the free positions and, with a free diagonal, its diagonal),
// else the column-normalized startBands-banded truncation of S^{1/2}.
func (p *bandProblem) start(x0 mat.Symmetric) []float64 {
	theta := make([]float64, p.nParams())
	nf := len(p.free)
	if x0 != nil {
		for k, idx := range p.free {
			i, d := idx/p.bw, idx%p.bw
			theta[k] = x0.At(i, i-d)
		}
		for j := nf; j < len(theta); j++ {
			theta[j] = x0.At(j-nf, j-nf)
		}
		return theta
	}
	n, sb := p.n, p.startBands
	c, _ := NuCoefficients(n, 0)
	// C0 = sb-banded truncation of Toeplitz(c); X0 = D C0ᵀC0 D with unit diagonal.
	// (C0ᵀC0)_{ij} = Σ_{k ≥ max(i,j), k−j < sb, k−i < sb} c_{k−i} c_{k−j}.
	xij := func(i, j int) float64 { // i ≥ j
		s := 0.0
		for k := i; k < n && k-j < sb; k++ {
			s += c[k-i] * c[k-j]
		}
		return s
	}
	dg := make([]float64, n)
	for i := range dg {
		dg[i] = math.Sqrt(xij(i, i))
	}
	for k, idx := range p.free {
		i, d := idx/p.bw, idx%p.bw
		if d < sb {
			theta[k] = xij(i, i-d) / (dg[i] * dg[i-d])
		}
	}
	for j := nf; j < len(theta); j++ {
		theta[j] = 1
	}
	return theta
}

// eval returns tr(AᵀA X⁻¹) for the band-stored X (+Inf if X is not positive
// definite) and, if gb != nil, fills gb with G = X⁻¹AᵀAX⁻¹ on the band.
func (p *bandProblem) eval(xs, gb []float64, ds *denseScratch) float64 {
	if p.dense {
		return p.denseLossGrad(xs, gb, ds)
	}
	if p.selOn {
		if p.sel == nil {
			p.sel = newSelEval(p.w, p.bw)
		}
		return p.sel.eval(xs, gb)
	}
	f, ok := reverseCholesky(xs, p.n, p.bw)
	if !ok {
		return math.Inf(1)
	}
	if gb != nil {
		for i := range gb {
			gb[i] = 0
		}
	}
	return p.lossGrad(f, gb)
}

// denseScratch holds the n×n buffers of the dense evaluator.
type denseScratch struct{ l, y, g []float64 }

// denseLossGrad is eval through dense linear algebra (bw = n): X = L Lᵀ
// (potrf), X⁻¹ (potri), Y = A X⁻¹, tr(AᵀA X⁻¹) = Σ_ij A_ij Y_ij and
// G = YᵀY; about 2n³ multiply-adds in DenseBackend.
func (p *bandProblem) denseLossGrad(xs, gb []float64, ds *denseScratch) float64 {
	n, bw := p.n, p.bw
	if ds.l == nil {
		ds.l, ds.y = make([]float64, n*n), make([]float64, n*n)
		ds.g = make([]float64, n*n)
	}
	l, y := ds.l, ds.y
	for i := 0; i < n; i++ {
		row := l[i*n : i*n+n]
		for j := 0; j <= i; j++ {
			row[j] = xs[i*bw+i-j]
		}
	}
	if !potrfLower(n, l) || !potriLower(n, l) {
		return math.Inf(1)
	}
	// Y = X⁻¹ (full), then Y ← A Y.
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			v := l[i*n+j]
			y[i*n+j], y[j*n+i] = v, v
		}
	}
	ym := &mat.Dense{}
	ym.SetRawMatrix(blas64.General{Rows: n, Cols: n, Stride: n, Data: y})
	p.w.mulA(ym, ym)
	f := 0.0
	for i := 0; i < n; i++ {
		f += blas64.Implementation().Ddot(i+1, p.a[i*n:], 1, y[i*n:], 1)
	}
	if gb == nil {
		return f
	}
	gramLower(n, y, ds.g)
	for i := 0; i < n; i++ {
		for d := 0; d <= i; d++ {
			gb[i*bw+bw-1-d] = ds.g[i*n+i-d]
		}
	}
	return f
}

func (p *bandProblem) solve(ctx context.Context, opts LBFGSOptions) (*Factorization, error) {
	opts.defaults()
	n, bw := p.n, p.bw
	xs := make([]float64, n*bw)
	gb := make([]float64, n*bw)
	ds := &denseScratch{}
	fg := func(theta, gr []float64) float64 {
		p.xFromParams(xs, theta)
		if gr == nil {
			return p.eval(xs, nil, ds)
		}
		v := p.eval(xs, gb, ds)
		if !math.IsInf(v, 1) {
			p.gradFromG(gr, gb)
		}
		return v
	}
	st := Status{Method: "L-BFGS", Gap: math.NaN()}
	if p.dense {
		st.Method = "L-BFGS (dense evaluation, " + DenseBackend + ")"
	}
	var x0 mat.Symmetric
	if opts.Start != nil {
		x0 = opts.Start
	}
	theta := p.start(x0)
	if len(theta) == 0 {
		st.Converged, st.Message, st.GradNorm = true, "no free entries (X = I)", 0
		return p.finish(theta, st)
	}
	// Diagonal scaling: near X the Hessian's diagonal for the pair (i,j) is
	// about 2(G_ii + G_jj), G = X⁻¹AᵀAX⁻¹ (exact at X = I), which varies by a
	// factor of order n along the band for prefix sums. Optimize over
	// u = θ/s with s = sqrt(mean h / h), h = G_ii + G_jj at the start.
	p.xFromParams(xs, theta)
	if math.IsInf(p.eval(xs, gb, ds), 1) {
		return nil, errors.New("strategy: L-BFGS start is not positive definite")
	}
	scale := p.hessDiag(gb)
	mean := 0.0
	for _, h := range scale {
		mean += h
	}
	mean /= float64(len(scale))
	for k, h := range scale {
		scale[k] = 1
		if h > 0 {
			scale[k] = math.Sqrt(mean / h)
		}
	}
	th := make([]float64, len(theta))
	fgU := func(u, gr []float64) float64 {
		for k := range th {
			th[k] = u[k] * scale[k]
		}
		v := fg(th, gr)
		if gr != nil {
			for k := range gr {
				gr[k] *= scale[k]
			}
		}
		return v
	}
	u0 := make([]float64, len(theta))
	for k := range u0 {
		u0[k] = theta[k] / scale[k]
	}
	// The problems whose evaluator splits its windows (evalTag "selinv2")
	// also split L-BFGS's two-loop recursion in halves.
	halves := p.selOn && !p.dense && p.bw >= parMinRows
	res, err := minimizeLBFGS(ctx, fgU, u0, opts.Store, opts.MaxIter, opts.RelTol, opts.Progress, halves)
	if err != nil {
		return nil, fmt.Errorf("strategy: optimization interrupted: %w", err)
	}
	for k := range res.x {
		res.x[k] *= scale[k]
	}
	// res.gradNorm is that of the rescaled problem.
	if math.IsInf(res.f, 1) {
		return nil, errors.New("strategy: L-BFGS start is not positive definite")
	}
	st.Iterations, st.Evals, st.GradNorm, st.Converged = res.iterations, res.evals, res.gradNorm, res.converged
	st.Message = fmt.Sprintf("%s, tr(AᵀA X⁻¹) = %.10g", res.message, res.f)
	return p.finish(res.x, st)
}

func (p *bandProblem) finish(theta []float64, st Status) (*Factorization, error) {
	n, bw := p.n, p.bw
	xs := make([]float64, n*bw)
	p.xFromParams(xs, theta)
	x := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for d := 0; d < bw && d <= i; d++ {
			x.SetSym(i, i-d, xs[i*bw+d])
		}
	}
	st, err := p.withCertificate(x, st)
	if err != nil {
		return nil, err
	}
	if p.dense {
		return NewFactorization("", x, st)
	}
	bf, ok := reverseCholesky(xs, n, bw)
	if !ok {
		return nil, errors.New("strategy: optimized X is not positive definite")
	}
	c := mat.NewTriDense(n, mat.Lower, nil)
	for j := 0; j < n; j++ {
		for d := 0; d < bw && j+d < n; d++ {
			c.SetTri(j+d, j, bf.cc[j*bw+d])
		}
	}
	return &Factorization{n: n, x: x, c: c, bands: Bandwidth(x, zeroTol), status: st}, nil
}
