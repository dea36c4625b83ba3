package strategy

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// FixedPointOptions controls OptimalSingle.
type FixedPointOptions struct {
	// Gap is the target relative duality gap (primal − dual)/primal; 0 means 1e-6.
	Gap float64
	// MaxIter caps the iterations; 0 means 10000.
	MaxIter int
	// Progress, if not nil, is called after each iteration.
	Progress func(iter int, primal, dual float64)
}

// OptimalSingle computes the optimal dense factorization for single
// participation: min tr(AᵀA X⁻¹) s.t. diag(X) = 1, by the fixed-point
// iteration v ← φ(v) = diag((V^½ AᵀA V^½)^½) of Denisov et al. 2022 (Thm 3.2).
// Each iterate yields a feasible primal X (diag normalized to 1) and the dual
// lower bound 2Σφ(v) − Σv; it stops when the relative gap is below opts.Gap
// and reports the gap reached in Status. One symmetric eigendecomposition per
// iteration (EigenBackend); the rest is O(n²) for prefix sums and one
// triangular product otherwise.
func OptimalSingle(ctx context.Context, w *Workload, opts FixedPointOptions) (*Factorization, error) {
	if opts.Gap == 0 {
		opts.Gap = 1e-6
	}
	if opts.MaxIter == 0 {
		opts.MaxIter = 10000
	}
	if opts.Gap < 0 || opts.MaxIter < 0 {
		panic("strategy: bad fixed-point options")
	}
	n := w.N()
	gm := w.Gram()
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Sqrt(gm.At(i, i))
	}
	m := mat.NewSymDense(n, nil)
	vals := make([]float64, n)
	q := mat.NewDense(n, n, nil)
	y := mat.NewDense(n, n, nil)
	phi := make([]float64, n)
	sv := make([]float64, n)
	st := Status{Method: "fixed point (" + EigenBackend + ")", GradNorm: math.NaN()}
	primal, dual := math.Inf(1), math.Inf(-1)
	for it := 1; ; it++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("strategy: fixed point interrupted: %w", err)
		}
		for i := range sv {
			sv[i] = math.Sqrt(v[i])
		}
		gr, mr := gm.RawSymmetric(), m.RawSymmetric()
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				mr.Data[i*mr.Stride+j] = sv[i] * gr.Data[i*gr.Stride+j] * sv[j]
			}
		}
		if err := eigSym(vals, q, m); err != nil {
			return nil, err
		}
		for k := range vals {
			if !(vals[k] > 0) {
				return nil, fmt.Errorf("strategy: fixed point: V^½AᵀAV^½ has eigenvalue %g ≤ 0", vals[k])
			}
		}
		// φ_i = Σ_k Q_ik² sqrt(λ_k); y = Φ^½ Q Λ^{-¼}.
		sl := make([]float64, n)
		ql := make([]float64, n)
		for k := range vals {
			sl[k] = math.Sqrt(vals[k])
			ql[k] = 1 / math.Sqrt(sl[k])
		}
		sumPhi, sumV := 0.0, 0.0
		for i := 0; i < n; i++ {
			row := q.RawRowView(i)
			s := 0.0
			for k, x := range row {
				s += x * x * sl[k]
			}
			phi[i] = s
			sumPhi += s
			sumV += v[i]
		}
		dual = 2*sumPhi - sumV
		for i := 0; i < n; i++ {
			row, yr := q.RawRowView(i), y.RawRowView(i)
			sp := math.Sqrt(phi[i])
			for k, x := range row {
				yr[k] = sp * x * ql[k]
			}
		}
		// primal = tr(AᵀA X_norm⁻¹) = ‖A Φ^½ Q Λ^{-¼}‖²_F with X_norm = Φ^{-½} R Φ^{-½}.
		w.mulA(y, y)
		primal = 0
		for i := 0; i < n; i++ {
			for _, x := range y.RawRowView(i) {
				primal += x * x
			}
		}
		st.Iterations = it
		st.Gap = (primal - dual) / primal
		if opts.Progress != nil {
			opts.Progress(it, primal, dual)
		}
		if st.Gap <= opts.Gap || it >= opts.MaxIter {
			st.Converged = st.Gap <= opts.Gap
			break
		}
		copy(v, phi)
	}
	st.Evals = st.Iterations
	st.Message = fmt.Sprintf("primal %.10g, dual bound %.10g", primal, dual)
	// X_norm = Φ^{-½} Q Λ^½ Qᵀ Φ^{-½}.
	for i := 0; i < n; i++ {
		row, yr := q.RawRowView(i), y.RawRowView(i)
		s := 1 / math.Sqrt(phi[i])
		for k, x := range row {
			yr[k] = s * x * math.Sqrt(math.Sqrt(vals[k]))
		}
	}
	x := mat.NewSymDense(n, nil)
	x.SymOuterK(1, y)
	for i := 0; i < n; i++ {
		x.SetSym(i, i, 1) // exact by construction up to rounding
	}
	return NewFactorization("optimal", x, st)
}
