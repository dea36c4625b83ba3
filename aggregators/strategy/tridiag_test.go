package strategy

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"dpfl/participation"
)

// The O(n²) bidiagonal eigensolver against the dense oracle (gonum EigenSym)
// on M = V^½ AᵀA V^½ with random positive v and a cooldown schedule.
func TestEigBidiagAgainstDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 2, 5, 40, 200} {
		w := Momentum(n, 0, LinearCooldown(n, n/4, 0.05))
		bd, bs, ok := w.bidiagInverse()
		if !ok {
			t.Fatal("no bidiagonal inverse")
		}
		v := make([]float64, n)
		for i := range v {
			v[i] = 0.2 + rng.Float64()
		}
		gm := w.Gram()
		m := mat.NewSymDense(n, nil)
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				m.SetSym(i, j, math.Sqrt(v[i]*v[j])*gm.At(i, j))
			}
		}
		for i := range bd {
			bd[i] /= math.Sqrt(v[i])
			if i < n-1 {
				bs[i] /= math.Sqrt(v[i+1])
			}
		}
		vals := make([]float64, n)
		q := mat.NewDense(n, n, nil)
		if err := eigBidiag(vals, q, bd, bs); err != nil {
			t.Fatal(err)
		}
		q.CloneFrom(q.T()) // eigBidiag returns Qᵀ
		// Reconstruct M = Q Λ Qᵀ and check orthogonality (tolerances relative
		// to ‖M‖, 1e-10; the oracle's own error is ~1e-13).
		var ql, rec, qtq mat.Dense
		ql.Apply(func(i, j int, x float64) float64 { return x * vals[j] }, q)
		rec.Mul(&ql, q.T())
		rec.Sub(&rec, m)
		if e := mat.Norm(&rec, math.Inf(1)) / mat.Norm(m, math.Inf(1)); e > 1e-10 {
			t.Errorf("n=%d: ‖QΛQᵀ − M‖/‖M‖ = %g", n, e)
		}
		qtq.Mul(q.T(), q)
		for i := 0; i < n; i++ {
			qtq.Set(i, i, qtq.At(i, i)-1)
		}
		if e := mat.Norm(&qtq, math.Inf(1)); e > 1e-10 {
			t.Errorf("n=%d: ‖QᵀQ − I‖ = %g", n, e)
		}
		var es mat.EigenSym
		es.Factorize(m, false)
		dv := es.Values(nil)
		// Dlasq1 orders σ decreasingly, so λ = 1/σ² comes out ascending like
		// EigenSym's; the large eigenvalues are the ones that matter (1e-10·λmax).
		for i := range dv {
			a, b := dv[i], vals[i]
			if !near(a, b, 1e-10*dv[n-1]) {
				t.Errorf("n=%d: eigenvalue %d: %v vs dense %v", n, i, b, a)
				break
			}
		}
	}
}

// The whole fixed point through both eigensolvers.
func TestOptimalFastMatchesDense(t *testing.T) {
	n := 96
	w := Momentum(n, 0, LinearCooldown(n, 24, 0.05))
	fast, err := OptimalSingle(context.Background(), w, FixedPointOptions{Gap: 1e-10})
	if err != nil {
		t.Fatal(err)
	}
	dense, err := OptimalSingle(context.Background(), w, FixedPointOptions{Gap: 1e-10, Dense: true})
	if err != nil {
		t.Fatal(err)
	}
	var diff mat.Dense
	diff.Sub(fast.Gram(), dense.Gram())
	// Both reach gap 1e-10; the iterates agree to ~1e-7 in X (the fixed point
	// converges linearly, so X is determined far less precisely than the loss).
	if e := mat.Norm(&diff, math.Inf(1)); fast.Status().Iterations != dense.Status().Iterations || e > 1e-6 {
		t.Errorf("‖X_fast − X_dense‖∞ = %g; fast %+v vs dense %+v", e, fast.Status(), dense.Status())
	}
	lf := mustEval(t, fast, w, participation.AtMostOnce).Loss
	ld := mustEval(t, dense, w, participation.AtMostOnce).Loss
	if !near(lf, ld, 1e-12*ld) {
		t.Errorf("loss fast %v vs dense %v (tolerance 1e-12 relative)", lf, ld)
	}
}

// Orthogonality of the twisted-factorization eigenvectors at n = 1024 with a
// smooth v like the fixed point's (tolerance 1e-9 on ‖QQᵀ − I‖∞; measured
// ≈ 6e-11 at n = 2048). The dual certificate inherits this accuracy.
func TestEigBidiagOrthogonalityN1024(t *testing.T) {
	t.Parallel()
	n := 1024
	bd, bs, _ := Prefix(n).bidiagInverse()
	v := func(i int) float64 { return 1 + 0.5*math.Sin(3*float64(i)/float64(n)) }
	for i := range bd {
		bd[i] /= math.Sqrt(v(i))
		if i < n-1 {
			bs[i] /= math.Sqrt(v(i + 1))
		}
	}
	vals := make([]float64, n)
	q := mat.NewDense(n, n, nil)
	if err := eigBidiag(vals, q, bd, bs); err != nil {
		t.Fatal(err)
	}
	var qq mat.Dense
	qq.Mul(q, q.T())
	for i := 0; i < n; i++ {
		qq.Set(i, i, qq.At(i, i)-1)
	}
	if e := mat.Norm(&qq, math.Inf(1)); e > 1e-9 {
		t.Errorf("‖QQᵀ − I‖∞ = %g > 1e-9", e)
	}
}
