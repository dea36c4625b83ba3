package strategy

import (
	"errors"
	"math"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/lapack/gonum"
	"gonum.org/v1/gonum/mat"
)

// bidiagInverse returns the lower-bidiagonal A⁻¹ (diag, sub with
// sub[i] = (A⁻¹)_{i+1,i}) when the workload has no momentum, A = S·diag(η):
// A⁻¹ = diag(1/η)·S⁻¹. ok is false otherwise.
func (w *Workload) bidiagInverse() (diag, sub []float64, ok bool) {
	if w.Beta != 0 || w.custom {
		return nil, nil, false
	}
	n := w.N()
	diag = make([]float64, n)
	sub = make([]float64, max(n-1, 0))
	for i := range diag {
		e := 1.0
		if w.Eta != nil {
			e = w.Eta[i]
		}
		if e == 0 || math.IsNaN(e) || math.IsInf(e, 0) {
			return nil, nil, false
		}
		diag[i] = 1 / e
		if i > 0 {
			sub[i-1] = -1 / e
		}
	}
	return diag, sub, true
}

// eigBidiag computes the eigendecomposition of M = V^½ AᵀA V^½ from the
// lower-bidiagonal B = V^{-½} A⁻¹ (M⁻¹ = B Bᵀ) in O(n²): the singular values
// of B by dqds (gonum Dlasq1, high relative accuracy) and one eigenvector of
// B Bᵀ − σ²I per singular value by a twisted factorization of its LDLᵀ
// representation (the MRRR kernel of Dhillon and Parlett, LAPACK dlar1v,
// without the cluster refinement: the eigenvalues of these matrices are
// relatively well separated). vals receives the eigenvalues of M, the
// rows of q the eigenvectors (q = Qᵀ, unlike eigSym).
func eigBidiag(vals []float64, q *mat.Dense, bd, bs []float64) error {
	n := len(bd)
	d := append([]float64(nil), bd...)
	e := append([]float64(nil), bs...)
	work := make([]float64, 4*n)
	if info := (gonum.Implementation{}).Dlasq1(n, d, e, work); info != 0 {
		return errors.New("strategy: dqds (Dlasq1) did not converge")
	}
	// LDLᵀ = B Bᵀ: D_i = B_ii², L_i = B_{i+1,i}/B_ii.
	D := make([]float64, n)
	L := make([]float64, max(n-1, 0))
	for i := range D {
		D[i] = bd[i] * bd[i]
		if i < n-1 {
			L[i] = bs[i] / bd[i]
		}
	}
	qr := q.RawMatrix()
	for k := 0; k < n; k++ {
		if !(d[k] > 0) {
			return errors.New("strategy: singular bidiagonal factor")
		}
		vals[k] = 1 / (d[k] * d[k])
	}
	workers := min(runtime.GOMAXPROCS(0), 2, n)
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for wk := 0; wk < workers; wk++ {
		wg.Add(1)
		go func(wk int) {
			defer wg.Done()
			for k := wk; k < n; k += workers {
				if !twisted(qr.Data[k*qr.Stride:k*qr.Stride+n], D, L, d[k]*d[k]) {
					errs[wk] = errors.New("strategy: twisted factorization overflowed")
					return
				}
			}
		}(wk)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return nil
}

// twisted writes into x the unit eigenvector of L D Lᵀ for the eigenvalue mu
// (Dhillon–Parlett twisted factorization: stationary and progressive qds
// transforms, twist at the minimal |γ_r|). It reports false on overflow.
func twisted(x, D, L []float64, mu float64) bool {
	n := len(x)
	const tiny = 1e-300
	s := make([]float64, n)
	p := make([]float64, n)
	lp := make([]float64, n)
	um := make([]float64, n)
	// Stationary qds: L+ D+ L+ᵀ = LDLᵀ − μI.
	s[0] = -mu
	for i := 0; i < n-1; i++ {
		dp := D[i] + s[i]
		if math.Abs(dp) < tiny {
			dp = -tiny
		}
		lp[i] = D[i] * L[i] / dp
		s[i+1] = lp[i]*L[i]*s[i] - mu
	}
	// Progressive qds: U− D− U−ᵀ = LDLᵀ − μI.
	p[n-1] = D[n-1] - mu
	for i := n - 2; i >= 0; i-- {
		dm := D[i]*L[i]*L[i] + p[i+1]
		if math.Abs(dm) < tiny {
			dm = -tiny
		}
		t := D[i] / dm
		um[i] = L[i] * t
		p[i] = p[i+1]*t - mu
	}
	// Twist index: minimal |γ_r|, γ_r = s_r + p_r + μ.
	r, best := 0, math.Inf(1)
	for i := 0; i < n; i++ {
		if g := math.Abs(s[i] + p[i] + mu); g < best {
			r, best = i, g
		}
	}
	x[r] = 1
	nrm := 1.0
	for i := r - 1; i >= 0; i-- {
		x[i] = -lp[i] * x[i+1]
		nrm += x[i] * x[i]
	}
	for i := r; i < n-1; i++ {
		x[i+1] = -um[i] * x[i]
		nrm += x[i+1] * x[i+1]
	}
	if math.IsInf(nrm, 0) || math.IsNaN(nrm) {
		return false
	}
	inv := 1 / math.Sqrt(nrm)
	for i := range x {
		x[i] *= inv
	}
	return true
}
