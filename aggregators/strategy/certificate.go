package strategy

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Certificates of the L-BFGS optimizations (BandMF, multi-epoch MF, and
// their unequal-column-norm variants). Each solves
//
//	min f(X) = tr(M X⁻¹), M = AᵀA, over X ≻ 0 with X_ij = 0 on a fixed set Z
//	of off-diagonal positions (outside the band; i ≡ j mod b) and either
//	X_ii = 1 (equal column norms) or Σ_{j∈π} X_jj = τ for every residue
//	class π mod b (unequal),
//
// a convex problem. Weak duality: for any symmetric D ≻ 0 that is zero on
// the free off-diagonal positions and whose diagonal is λ_i (equal) or
// constant λ_π on each class (unequal), and every feasible X,
// f(X) ≥ f(X) + ⟨D, X⟩ − c(D) ≥ inf_{Y≻0} [tr(MY⁻¹) + ⟨D, Y⟩] − c(D)
// = 2‖A L‖_* − c(D), with D = L Lᵀ and c(D) = Σ_i λ_i (equal) or
// Σ_π λ_π τ (unequal) = ⟨D, X⟩ for feasible X. Scaling D by s > 0 and
// maximizing over s gives the bound
//
//	f* ≥ ‖A L‖²_* / c(D).
//
// The dual candidate is the KKT multiplier the primal X implies: G =
// X⁻¹MX⁻¹ (minus the gradient of f) on Z and on the diagonal (class means
// for unequal), zero on the free positions; at the optimum it is exactly the
// multiplier and the bound is tight. Far from the optimum it may be
// indefinite: it is then shifted by a multiple of I (the best of a few). The relative gap (f(X) − bound)/f(X)
// bounds the relative suboptimality of X. The KKT residual is the norm of
// the part of G the multipliers cannot absorb (the free entries, counted
// twice, and the diagonal's deviation from its class means), relative to
// ‖G‖_F: the projected gradient, zero at the optimum. Cost: Cholesky and
// inverse of X, two n×n products, Cholesky of D and the singular values of
// A L, in pure Go (O(n³), the SVD the largest part); when the candidate
// must be shifted, one eigenvalue computation and up to three more bounds.

// certificate is what certify computes.
type certificate struct {
	loss  float64 // f(X), recomputed densely
	lower float64 // the dual bound (NaN when the candidate is not positive definite)
	kkt   float64 // relative KKT residual
}

// certify computes the certificate of X for p.
func (p *bandProblem) certify(x *mat.SymDense) (certificate, error) {
	n, bw := p.n, p.bw
	var chx mat.Cholesky
	if !chx.Factorize(x) {
		return certificate{}, errors.New("strategy: certificate: X is not positive definite")
	}
	var xi mat.SymDense
	if err := chx.InverseTo(&xi); err != nil {
		return certificate{}, fmt.Errorf("strategy: certificate: %w", err)
	}
	y := mat.NewDense(n, n, nil)
	y.Copy(&xi)
	p.w.mulA(y, y) // Y = A X⁻¹
	a := p.w.A()
	loss := 0.0
	for i := 0; i < n; i++ {
		row := y.RawRowView(i)
		for j := 0; j <= i; j++ {
			loss += a.At(i, j) * row[j]
		}
	}
	g := atb(y, y) // G = X⁻¹ M X⁻¹
	free := make([]bool, n*bw)
	for _, idx := range p.free {
		free[idx] = true
	}
	d := mat.NewSymDense(n, nil)
	res2, g2 := 0.0, 0.0
	for i := 0; i < n; i++ {
		for j := 0; j < i; j++ {
			v := g.At(i, j)
			g2 += 2 * v * v
			if i-j < bw && free[i*bw+i-j] {
				res2 += 2 * v * v
				continue
			}
			d.SetSym(i, j, v)
		}
		g2 += g.At(i, i) * g.At(i, i)
	}
	c := 0.0
	if p.mod == 0 {
		for i := 0; i < n; i++ {
			d.SetSym(i, i, g.At(i, i))
			c += g.At(i, i)
		}
	} else {
		lam := make([]float64, len(p.count))
		for j := 0; j < n; j++ {
			lam[j%p.mod] += g.At(j, j)
		}
		for r := range lam {
			lam[r] /= float64(p.count[r])
			c += lam[r] * p.target
		}
		for j := 0; j < n; j++ {
			d.SetSym(j, j, lam[j%p.mod])
			dev := g.At(j, j) - lam[j%p.mod]
			res2 += dev * dev
		}
	}
	cert := certificate{loss: loss, lower: math.NaN(), kkt: math.Sqrt(res2 / g2)}
	if lb, ok := p.dualBound(d, c); ok {
		cert.lower = lb
		return cert, nil
	}
	// Far from the optimum the candidate may be indefinite: shift it by μI
	// (a diagonal multiplier, allowed in both formulations; c grows by
	// μ·n), μ = s·|λ_min(D)| for a few s, and keep the best bound.
	var eig mat.EigenSym
	if !eig.Factorize(d, false) {
		return cert, nil
	}
	lmin := eig.Values(nil)[0]
	for _, s := range []float64{1.05, 1.5, 3} {
		mu := s * math.Abs(lmin)
		ds := mat.NewSymDense(n, nil)
		ds.CopySym(d)
		for i := 0; i < n; i++ {
			ds.SetSym(i, i, d.At(i, i)+mu)
		}
		if lb, ok := p.dualBound(ds, c+mu*float64(n)); ok && !(lb <= cert.lower) {
			cert.lower = lb
		}
	}
	return cert, nil
}

// dualBound returns ‖A L‖²_* / c for D = L Lᵀ, and false when D is not
// positive definite.
func (p *bandProblem) dualBound(d *mat.SymDense, c float64) (float64, bool) {
	var chd mat.Cholesky
	if !(c > 0) || !chd.Factorize(d) {
		return 0, false
	}
	n := p.n
	var l mat.TriDense
	chd.LTo(&l)
	al := mat.NewDense(n, n, nil)
	al.Copy(&l)
	p.w.mulA(al, al)
	var svd mat.SVD
	if !svd.Factorize(al, mat.SVDNone) {
		return 0, false
	}
	t := 0.0
	for _, s := range svd.Values(nil) {
		t += s
	}
	return t * t / c, true
}

// withCertificate returns st with the certificate of X for p: Gap is the
// relative gap (f − bound)/f (NaN when no bound), KKT the residual, and the
// message says what they mean.
func (p *bandProblem) withCertificate(x *mat.SymDense, st Status) (Status, error) {
	cert, err := p.certify(x)
	if err != nil {
		return st, err
	}
	st.Gap, st.KKT = math.NaN(), cert.kkt
	st.Lower = cert.lower
	msg := fmt.Sprintf("certificate: dual bound %.10g", cert.lower)
	if math.IsNaN(cert.lower) {
		msg = "certificate: no dual bound (no positive definite multiplier candidate)"
	} else {
		st.Gap = math.Max(0, (cert.loss-cert.lower)/cert.loss)
		msg += fmt.Sprintf(" ≤ optimum ≤ tr(AᵀA X⁻¹) = %.10g, relative gap %.2e", cert.loss, st.Gap)
	}
	msg += fmt.Sprintf("; KKT residual %.2e (projected gradient relative to ‖X⁻¹AᵀAX⁻¹‖_F)", cert.kkt)
	if st.Message != "" {
		msg = st.Message + "; " + msg
	}
	st.Message = msg
	st.Certified = true
	return st, nil
}
