package strategy

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"dpfl/participation"
)

func init() {
	Register(Builder{Name: "optimal", Order: 4, Memory: denseMemory(8), Build: func(ctx context.Context, cfg Config) (Strategy, error) {
		return cfg.Cache.Optimal(ctx, cfg.Workload, FixedPointOptions{Gap: cfg.Gap, Progress: cfg.GapProgress})
	}})
}

// FixedPointOptions controls OptimalSingle.
type FixedPointOptions struct {
	// Gap is the target relative duality gap (primal − dual)/primal; 0 means 1e-6.
	Gap float64
	// MaxIter caps the iterations; 0 means 10000.
	MaxIter int
	// Progress, if not nil, is called after each iteration.
	Progress func(iter int, primal, dual float64)
	// Dense forces the dense symmetric eigensolver even when the O(n²)
	// bidiagonal path applies (workloads without momentum); for tests.
	Dense bool
	// Anderson is the history length of Anderson acceleration of the
	// iteration in log v (0: 5; negative: plain iteration v ← φ(v)). The
	// certificate is unaffected: the dual bound holds for any v > 0 and the
	// primal is always a feasible X.
	Anderson int
}

// OptimalSingle computes the optimal dense factorization for single
// participation: min tr(AᵀA X⁻¹) s.t. diag(X) = 1, by the fixed-point
// iteration v ← φ(v) = diag((V^½ AᵀA V^½)^½) of Denisov et al. 2022 (Thm 3.2).
// Each iterate yields a feasible primal X (diag normalized to 1) and the dual
// lower bound 2Σφ(v) − Σv; it stops when the relative gap is below opts.Gap
// and reports the gap reached in Status. One symmetric eigendecomposition per
// iteration (EigenBackend); the rest is O(n²) for prefix sums and one
// triangular product otherwise. The result keeps X = YᵀY in factored form
// (Y n×n); X and C, O(n³), are formed on first use (Factorization).
func OptimalSingle(ctx context.Context, w *Workload, opts FixedPointOptions) (*Factorization, error) {
	opts = opts.withDefaults()
	n := w.N()
	bd, bs, fast := w.bidiagInverse()
	fast = fast && !opts.Dense
	var gm *mat.SymDense
	var m *mat.SymDense
	if !fast {
		gm = w.Gram()
		m = mat.NewSymDense(n, nil)
	}
	v := columnNorms(w.A().RawTriangular(), n) // start: v_i = ‖A e_i‖
	vals := make([]float64, n)
	q := mat.NewDense(n, n, nil)
	y := mat.NewDense(n, n, nil)
	phi := make([]float64, n)
	sv := make([]float64, n)
	method := "fixed point (" + EigenBackend + ")"
	var bdv, bsv []float64
	if fast {
		method = "fixed point (O(n²) bidiagonal dqds + twisted factorization)"
		bdv, bsv = make([]float64, n), make([]float64, max(n-1, 0))
	}
	st := Status{Method: method, GradNorm: math.NaN()}
	primal, dual := math.Inf(1), math.Inf(-1)
	acc := newAnderson(n, max(opts.Anderson, 1))
	bestGap := math.Inf(1)
	for it := 1; ; it++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("strategy: fixed point interrupted: %w", err)
		}
		for i := range sv {
			sv[i] = math.Sqrt(v[i])
		}
		if fast {
			if err := fastEig(vals, q, bd, bs, bdv, bsv, sv); err != nil {
				return nil, err
			}
		} else {
			gr, mr := gm.RawSymmetric(), m.RawSymmetric()
			for i := 0; i < n; i++ {
				for j := i; j < n; j++ {
					mr.Data[i*mr.Stride+j] = sv[i] * gr.Data[i*gr.Stride+j] * sv[j]
				}
			}
			if err := eigSym(vals, q, m); err != nil {
				return nil, err
			}
		}
		if err := positiveEigenvalues(vals); err != nil {
			return nil, err
		}
		sl, ql := rootsOf(vals)
		sumV := sum(v)
		var sumPhi float64
		if fast {
			sumPhi, primal = fastPhiPrimal(phi, q, sl, ql, w.Eta)
		} else {
			sumPhi, primal = densePhiPrimal(phi, q, y, sl, ql, w)
		}
		dual = 2*sumPhi - sumV
		st.Iterations = it
		st.Gap = (primal - dual) / primal
		if opts.Progress != nil {
			opts.Progress(it, primal, dual)
		}
		if st.Gap <= opts.Gap || it >= opts.MaxIter {
			st.Converged = st.Gap <= opts.Gap
			break
		}
		if opts.Anderson < 0 {
			copy(v, phi)
			continue
		}
		if st.Gap > 10*bestGap {
			acc.reset() // safeguard: the accelerated step went astray
		}
		bestGap = math.Min(bestGap, st.Gap)
		acc.next(v, phi)
	}
	st.Evals = st.Iterations
	st.Message = fmt.Sprintf("primal %.10g, dual bound %.10g", primal, dual)
	// X_norm = Φ^{-½} Q Λ^½ Qᵀ Φ^{-½} = Yᵀ Y with Y = Λ^¼ Qᵀ Φ^{-½}: the
	// strategy keeps Y (O(n²)) and forms X = YᵀY (O(n³), gramUpper) and C
	// on first use (Factorization.Explicit).
	var form func() *mat.SymDense
	if fast { // q holds Qᵀ
		f := fastFactored(w, v, q, y, vals, phi, st)
		f.name = "optimal"
		return f, nil
	} else {
		denseY(y, q, phi, vals)
		form = func() *mat.SymDense { return unitDiag(atb(y.T(), y.T())) }
	}
	return factored("optimal", n, form, st), nil
}

// withDefaults returns o with its zero fields set to their defaults; it
// panics on a negative Gap or MaxIter.
func (o FixedPointOptions) withDefaults() FixedPointOptions {
	if o.Gap == 0 {
		o.Gap = 1e-6
	}
	if o.MaxIter == 0 {
		o.MaxIter = 10000
	}
	if o.Gap < 0 || o.MaxIter < 0 {
		panic("strategy: bad fixed-point options")
	}
	if o.Anderson == 0 {
		o.Anderson = 5
	}
	return o
}

// columnNorms returns the column norms of the n×n lower triangular a:
// v_j = ‖A e_j‖ = sqrt((AᵀA)_jj), summed over rows in order.
func columnNorms(a blas64.Triangular, n int) []float64 {
	v := make([]float64, n)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			x := a.Data[i*a.Stride+j]
			v[j] += x * x
		}
	}
	for i := range v {
		v[i] = math.Sqrt(v[i])
	}
	return v
}

// positiveEigenvalues reports the first eigenvalue of V^½AᵀAV^½ in vals
// that is not positive.
func positiveEigenvalues(vals []float64) error {
	for k := range vals {
		if !(vals[k] > 0) {
			return fmt.Errorf("strategy: fixed point: V^½AᵀAV^½ has eigenvalue %g ≤ 0", vals[k])
		}
	}
	return nil
}

// sum returns the sum of xs, added in order.
func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

// denseY forms the dense path's Y = Λ^¼ Qᵀ Φ^{-½} into y, row i of y from
// row i of q (the eigenvectors in its columns), φ in phi and λ in vals.
func denseY(y, q *mat.Dense, phi, vals []float64) {
	for i := range phi {
		row, yr := q.RawRowView(i), y.RawRowView(i)
		s := 1 / math.Sqrt(phi[i])
		for k, qx := range row {
			yr[k] = s * qx * math.Sqrt(math.Sqrt(vals[k]))
		}
	}
}

// fastEig is the eigendecomposition step of the O(n²) path: the eigenvalues
// of V^½AᵀAV^½ into vals and its eigenvectors into the rows of q, from
// B = V^{-½}A⁻¹ (A⁻¹ lower bidiagonal bd, bs; sv = sqrt(v); bdv, bsv
// scratch).
func fastEig(vals []float64, q *mat.Dense, bd, bs, bdv, bsv, sv []float64) error {
	n := len(bd)
	// M⁻¹ = B Bᵀ with B = V^{-½} A⁻¹ lower bidiagonal.
	for i := range bdv {
		bdv[i] = bd[i] / sv[i]
		if i < n-1 {
			bsv[i] = bs[i] / sv[i+1]
		}
	}
	return eigBidiag(vals, q, bdv, bsv)
}

// rootsOf returns λ^½ and λ^{-¼} of the eigenvalues.
func rootsOf(vals []float64) (sl, ql []float64) {
	sl, ql = make([]float64, len(vals)), make([]float64, len(vals))
	for k := range vals {
		sl[k] = math.Sqrt(vals[k])
		ql[k] = 1 / math.Sqrt(sl[k])
	}
	return sl, ql
}

// singleFactored is what the O(n²) fixed point keeps of its last iterate:
// v (from which the cache rebuilds the strategy, optimalFromV) and the
// eigendecomposition, from which the single-participation metrics follow
// in O(n²) without forming X (factoredMetrics).
type singleFactored struct {
	wkey     string
	v        []float64
	qt       *mat.Dense // eigenvectors of V^½AᵀAV^½ in the rows
	vals     []float64
	phi, eta []float64
}

// fastFactored returns the strategy of the O(n²) path from its last
// iterate v (eigenvectors in the rows of q, eigenvalues vals, φ(v) = phi;
// y is scratch): X = YᵀY with Y = Λ^¼ Qᵀ Φ^{-½}, formed on first use.
func fastFactored(w *Workload, v []float64, q, y *mat.Dense, vals, phi []float64, st Status) *Factorization {
	n := len(v)
	for k := 0; k < n; k++ {
		row, yr := q.RawRowView(k), y.RawRowView(k)
		s := math.Sqrt(math.Sqrt(vals[k]))
		for i, qx := range row {
			yr[i] = s * qx / math.Sqrt(phi[i])
		}
	}
	f := factored("optimal", n, func() *mat.SymDense { return unitDiag(atb(y, y)) }, st)
	f.single = &singleFactored{wkey: w.Key(), v: append([]float64(nil), v...), qt: q, vals: vals, phi: phi, eta: w.Eta}
	return f
}

// optimalFromV rebuilds the O(n²)-path strategy from its last iterate v
// (as the cache stores it) by the operations of OptimalSingle's last
// iteration: the same bits.
func optimalFromV(w *Workload, v []float64, st Status) (*Factorization, error) {
	n := w.N()
	bd, bs, fast := w.bidiagInverse()
	if !fast || len(v) != n {
		return nil, fmt.Errorf("strategy: cannot rebuild the optimal strategy from %d values for this workload", len(v))
	}
	sv := make([]float64, n)
	for i := range sv {
		if !(v[i] > 0) || math.IsInf(v[i], 0) {
			return nil, fmt.Errorf("strategy: cached fixed-point iterate has v[%d] = %v", i, v[i])
		}
		sv[i] = math.Sqrt(v[i])
	}
	vals, q := make([]float64, n), mat.NewDense(n, n, nil)
	if err := fastEig(vals, q, bd, bs, make([]float64, n), make([]float64, max(n-1, 0)), sv); err != nil {
		return nil, err
	}
	for k := range vals {
		if !(vals[k] > 0) {
			return nil, fmt.Errorf("strategy: fixed point: V^½AᵀAV^½ has eigenvalue %g ≤ 0", vals[k])
		}
	}
	sl, ql := rootsOf(vals)
	phi := make([]float64, n)
	fastPhiPrimal(phi, q, sl, ql, w.Eta)
	return fastFactored(w, v, q, mat.NewDense(n, n, nil), vals, phi, st), nil
}

// unitDiag sets the diagonal of the normalized X to 1 (exact by
// construction up to rounding) and returns x.
func unitDiag(x *mat.SymDense) *mat.SymDense {
	for i := 0; i < x.SymmetricDim(); i++ {
		x.SetSym(i, i, 1)
	}
	return x
}

// densePhiPrimal computes φ_i = Σ_k Q_ik² sqrt(λ_k) (into phi) and the primal
// tr(AᵀA X_norm⁻¹) = ‖A Φ^½ Q Λ^{-¼}‖²_F, X_norm = Φ^{-½} M^½ Φ^{-½}, from the
// eigenvectors in the columns of q; y is scratch. It returns Σφ and the primal.
func densePhiPrimal(phi []float64, q, y *mat.Dense, sl, ql []float64, w *Workload) (sumPhi, primal float64) {
	n := len(phi)
	for i := 0; i < n; i++ {
		row := q.RawRowView(i)
		s := 0.0
		for k, x := range row {
			s += x * x * sl[k]
		}
		phi[i] = s
		sumPhi += s
	}
	for i := 0; i < n; i++ {
		row, yr := q.RawRowView(i), y.RawRowView(i)
		sp := math.Sqrt(phi[i])
		for k, x := range row {
			yr[k] = sp * x * ql[k]
		}
	}
	w.mulA(y, y)
	for i := 0; i < n; i++ {
		for _, x := range y.RawRowView(i) {
			primal += x * x
		}
	}
	return sumPhi, primal
}

// fastPhiPrimal is densePhiPrimal for eigenvectors in the rows of qt and
// A = S·diag(eta) (eta nil: ones), in O(n²) on two goroutines.
func fastPhiPrimal(phi []float64, qt *mat.Dense, sl, ql, eta []float64) (sumPhi, primal float64) {
	n := len(phi)
	var wg sync.WaitGroup
	half := n / 2
	// φ over column ranges.
	for _, r := range [][2]int{{0, half}, {half, n}} {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			p := phi[lo:hi]
			for i := range p {
				p[i] = 0
			}
			for k := 0; k < n; k++ {
				row := qt.RawRowView(k)[lo:hi]
				s := sl[k]
				for i, x := range row {
					p[i] += x * x * s
				}
			}
		}(r[0], r[1])
	}
	wg.Wait()
	sp := make([]float64, n)
	for i, f := range phi {
		sumPhi += f
		sp[i] = math.Sqrt(f)
		if eta != nil {
			sp[i] *= eta[i]
		}
	}
	// primal = Σ_k λ_k^{-½} ‖S diag(η) Φ^½ q_k‖².
	parts := [2]float64{}
	for h, r := range [][2]int{{0, half}, {half, n}} {
		wg.Add(1)
		go func(h, lo, hi int) {
			defer wg.Done()
			tot := 0.0
			for k := lo; k < hi; k++ {
				t, acc := 0.0, 0.0
				for i, x := range qt.RawRowView(k) {
					t += sp[i] * x
					acc += t * t
				}
				tot += acc * ql[k] * ql[k]
			}
			parts[h] = tot
		}(h, r[0], r[1])
	}
	wg.Wait()
	return sumPhi, parts[0] + parts[1]
}

// anderson is Anderson acceleration (type II) of u ← G(u) with u = log v,
// G(u) = log φ(exp u) (andersonVec in log space): the next iterate is
// G(u_k) − ΔG γ with γ minimizing ‖f_k − ΔF γ‖, f = G(u) − u, over the last
// m differences.
type anderson struct {
	vec    *andersonVec
	cu, cg []float64
}

func newAnderson(n, m int) *anderson {
	return &anderson{vec: newAndersonVec(n, m), cu: make([]float64, n), cg: make([]float64, n)}
}

func (a *anderson) reset() { a.vec.reset() }

// next overwrites v (the current iterate) with the accelerated next iterate,
// given phi = φ(v).
func (a *anderson) next(v, phi []float64) {
	for i := range v {
		a.cu[i] = math.Log(v[i])
		a.cg[i] = math.Log(phi[i])
	}
	if !a.vec.next(a.cu, a.cg) {
		copy(v, phi)
		return
	}
	for _, x := range a.cu {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			a.reset()
			copy(v, phi)
			return
		}
	}
	for i, x := range a.cu {
		v[i] = math.Exp(x)
	}
}

// factoredResidualProbes is the number of random probes of the residual
// estimate in factoredMetrics.
const factoredResidualProbes = 4

// factoredMetrics returns the single-participation metrics of the optimal
// strategy of the O(n²) path from its eigendecomposition, in O(n²) and
// without forming X or C (which costs minutes at n = 8192): X has unit
// diagonal, so the sensitivity is 1; B Bᵀ = A X⁻¹ Aᵀ with X⁻¹ = Y⁻¹Y⁻ᵀ,
// Y⁻¹ = Φ^½ Q Λ^{-¼}, so the squared row norms of B are
// Σ_k λ_k^{-½} (S diag(η) Φ^½ q_k)_i², their sum the loss (the fixed
// point's primal). The residual is that of the factor pair (A Y⁻¹, Y):
// ‖(A Y⁻¹ Y − A) z‖ over factoredResidualProbes Rademacher vectors z (a
// fixed stream), an unbiased estimate of ‖A Y⁻¹Y − A‖²_F, relative to
// ‖A‖_F. false if f is not such a strategy or w is not its workload.
func (f *Factorization) factoredMetrics(w *Workload) (Metrics, bool) {
	sf := f.single
	if sf == nil || w.Key() != sf.wkey {
		return Metrics{}, false
	}
	n := f.n
	sl, ql := rootsOf(sf.vals)
	sp := make([]float64, n)
	for i, p := range sf.phi {
		sp[i] = math.Sqrt(p)
		if sf.eta != nil {
			sp[i] *= sf.eta[i]
		}
	}
	// Row norms on two goroutines over halves of k, summed in order.
	half := n / 2
	parts := [2][]float64{make([]float64, n), make([]float64, n)}
	var wg sync.WaitGroup
	for h, r := range [][2]int{{0, half}, {half, n}} {
		wg.Add(1)
		go func(acc []float64, lo, hi int) {
			defer wg.Done()
			for k := lo; k < hi; k++ {
				t, c := 0.0, ql[k]*ql[k]
				for i, x := range sf.qt.RawRowView(k) {
					t += sp[i] * x
					acc[i] += t * t * c
				}
			}
		}(parts[h], r[0], r[1])
	}
	wg.Wait()
	fro2, worst := 0.0, 0.0
	for i := range parts[0] {
		r := parts[0][i] + parts[1][i]
		fro2 += r
		worst = math.Max(worst, r)
	}
	res := sf.residual(n, sl, ql)
	one := Sensitivity{Value: 1, Exact: true, Method: "max column norm"}
	return Metrics{
		Strategy:          f.name,
		N:                 n,
		Participation:     participation.AtMostOnce.String(),
		Sensitivity:       one,
		SingleSensitivity: 1,
		FrobB2:            fro2,
		Loss:              fro2,
		RMSE:              math.Sqrt(fro2 / float64(n)),
		MaxRoundStd:       math.Sqrt(worst),
		Residual:          res,
		ResidualEstimated: true,
		Cost:              Cost{Time: float64(n), Memory: float64(n), Note: denseCostNote},
	}, true
}

// residual is factoredMetrics' residual estimate of the factor pair
// (A Y⁻¹, Y) of size n, from sl = √λ and ql = λ^{-¼} (rootsOf): the
// root mean of ‖(A Y⁻¹ Y − A) z‖² over factoredResidualProbes Rademacher
// vectors z (a fixed stream), relative to ‖A‖_F.
func (sf *singleFactored) residual(n int, sl, ql []float64) float64 {
	// Residual probes: Y z = Λ^¼ Qᵀ Φ^{-½} z, then Y⁻¹(Y z) = Φ^½ Q Λ^{-¼}(Y z),
	// compared with z under A.
	rng := rand.New(rand.NewPCG(0x5eed, 18))
	z, u, back := make([]float64, n), make([]float64, n), make([]float64, n)
	num := 0.0
	for j := 0; j < factoredResidualProbes; j++ {
		for i := range z {
			z[i] = 1
			if rng.Uint64()&1 == 1 {
				z[i] = -1
			}
		}
		for k := 0; k < n; k++ {
			t := 0.0
			for i, x := range sf.qt.RawRowView(k) {
				t += x * z[i] / math.Sqrt(sf.phi[i])
			}
			u[k] = t * math.Sqrt(sl[k]) * ql[k] // λ^¼ then λ^{-¼}
		}
		for i := range back {
			back[i] = 0
		}
		for k := 0; k < n; k++ {
			c := u[k]
			for i, x := range sf.qt.RawRowView(k) {
				back[i] += c * x
			}
		}
		// A(Y⁻¹Y z) − A z with A = S diag(η): running sums of η_i (back_i·√φ_i − z_i).
		s := 0.0
		for i := range back {
			e := 1.0
			if sf.eta != nil {
				e = sf.eta[i]
			}
			s += e * (back[i]*math.Sqrt(sf.phi[i]) - z[i])
			num += s * s
		}
	}
	fa := 0.0 // ‖A‖²_F = Σ_i Σ_{j≤i} η_j²
	cum := 0.0
	for i := 0; i < n; i++ {
		e := 1.0
		if sf.eta != nil {
			e = sf.eta[i]
		}
		cum += e * e
		fa += cum
	}
	return math.Sqrt(num/factoredResidualProbes) / math.Sqrt(fa)
}
