package strategy

import "math"

// selEval evaluates the BandMF objective through the banded matrix
// K = Rᵀ X R, R = A⁻¹, for prefix sums with a learning-rate schedule,
// A = S·diag(η), whose inverse R = diag(1/η)·S⁻¹ is bidiagonal (q = 1
// sub-diagonal). Then tr(AᵀA X⁻¹) = tr(A X⁻¹ Aᵀ) = tr(K⁻¹), and K has
// half-bandwidth m = bw − 1 + q. The loss is the trace of the selected
// inverse S = K⁻¹ on the band (Takahashi's recurrences on the banded
// Cholesky factor), and the gradient −K⁻² on the band comes from
// differentiating those recurrences and the Cholesky factorization in
// reverse mode, so that one evaluation costs O(n m²) instead of the
// O(n² bw) of solving with every row of A (bandProblem.lossGrad).
// G = X⁻¹AᵀAX⁻¹ = R K⁻² Rᵀ is then formed on X's band.
type selEval struct {
	n, bw, m int
	// r[2i+1] = R_ii, r[2i] = R_{i,i−1} (q = 1).
	r []float64
	// Band storage by rows, width m+1: v[base(i)+j] = V_ij for
	// j ∈ [i−m, i], base(i) = i*(m+1)+m−i.
	k, l, lb, s, sb []float64
	w, wb, y, yb    []float64
	// Columns below the diagonal, column-major (c[j*m+a] = V_{j+1+a,j}):
	// of L (lc), of S (sc) and of L̄ (lbc, which has no other copy), so
	// that the column passes read them contiguously instead of one band
	// row apart (same values, same bits).
	lc, sc, lbc []float64
}

// newSelEval returns the evaluator for a bw-banded X and workload w, or nil
// for a Custom workload (A⁻¹ not known to be banded) or one with momentum:
// with β > 0, R = T_β⁻¹ diag(1/η) S⁻¹ is a second difference and forming
// K = Rᵀ X R cancels digits (tr(K⁻¹) was 2.7e-11 off, relative, at β = 0.9,
// n = 90, against 9e-15 for the row solves, checked in 256-bit arithmetic).
func newSelEval(w *Workload, bw int) *selEval {
	if w.custom || w.Beta != 0 {
		return nil
	}
	n := w.N()
	e := &selEval{n: n, bw: bw, m: bw}
	e.r = make([]float64, 2*n)
	for i := 0; i < n; i++ {
		eta := 1.0
		if w.Eta != nil {
			eta = w.Eta[i]
		}
		e.r[2*i+1] = 1 / eta // R_ii
		if i > 0 {
			e.r[2*i] = -1 / eta // R_{i,i−1}
		}
	}
	sz := n * (e.m + 1)
	e.k, e.l, e.lb, e.s, e.sb = make([]float64, sz), make([]float64, sz), make([]float64, sz), make([]float64, sz), make([]float64, sz)
	e.w, e.wb, e.y, e.yb = make([]float64, e.m), make([]float64, e.m), make([]float64, e.m), make([]float64, e.m)
	e.lc, e.sc, e.lbc = make([]float64, n*e.m), make([]float64, n*e.m), make([]float64, n*e.m)
	return e
}

func (e *selEval) base(i int) int { return i*(e.m+1) + e.m - i }

// eval returns tr(AᵀA X⁻¹) for the band-stored X (xs[i*bw+d] = X_{i,i−d}),
// +Inf if X (equivalently K) is not positive definite, and, if gb != nil,
// writes G on the band into gb (gb[i*bw+bw−1−d] = G_{i,i−d}).
func (e *selEval) eval(xs, gb []float64) float64 {
	n, bw, m := e.n, e.bw, e.m
	// K = Rᵀ X R on the band: K_ij = Σ_{a∈[i,i+q]} Σ_{b∈[j,j+q]} R_ai X_ab R_bj
	// (i ≥ j, i − j ≤ m), with X_ab = 0 for |a − b| ≥ bw.
	k, l, s := e.k, e.l, e.s
	r := e.r
	// q = 1 (newSelEval): a ∈ {i, i+1}, b ∈ {j, j+1}, in the order of the
	// general sums (each partial sum starts from 0 and adds its terms in
	// order, so the bits are those of the loops over a and b).
	for i := 0; i < n; i++ {
		bi := e.base(i)
		ri, ri1 := r[2*i+1], 0.0 // R_ii, R_{i+1,i}
		if i+1 < n {
			ri1 = r[2*i+2]
		}
		for j := max(0, i-m); j <= i; j++ {
			rj, rj1 := r[2*j+1], 0.0
			if j+1 < n {
				rj1 = r[2*j+2]
			}
			// a = i: b = j (d = i−j ≥ 0), b = j+1 (d = |i−j−1|).
			u := 0.0
			if d := i - j; d < bw {
				u += float64(xs[i*bw+d] * rj)
			}
			if j+1 < n {
				if d := i - j - 1; d >= 0 && d < bw {
					u += float64(xs[i*bw+d] * rj1)
				} else if d < 0 && -d < bw {
					u += float64(xs[(j+1)*bw-d] * rj1)
				}
			}
			v := 0.0
			v += float64(ri * u)
			if i+1 < n { // a = i+1 ≥ b for both b.
				u := 0.0
				if d := i + 1 - j; d < bw {
					u += float64(xs[(i+1)*bw+d] * rj)
				}
				if j+1 < n {
					if d := i - j; d < bw {
						u += float64(xs[(i+1)*bw+d] * rj1)
					}
				}
				v += float64(ri1 * u)
			}
			k[bi+j] = v
		}
	}
	// Cholesky K = L Lᵀ, right-looking: column j of L from the current
	// trailing matrix, then the rank-one update of the next m rows (the
	// window). Products are converted to float64 before they are added
	// (here and below), so that no compiler fuses them into FMAs: the
	// bits do not depend on GOAMD64 or the architecture.
	copy(l, k)
	w, y := e.w, e.y
	lc, sc := e.lc, e.sc
	for j := 0; j < n; j++ {
		bj := e.base(j)
		v := l[bj+j]
		if !(v > 0) {
			return math.Inf(1)
		}
		ljj := math.Sqrt(v)
		l[bj+j] = ljj
		cnt := min(n-1, j+m) - j
		for a := 0; a < cnt; a++ {
			i := e.base(j+1+a) + j
			l[i] /= ljj
			w[a] = l[i]
			lc[j*m+a] = l[i]
		}
		for a := 0; a < cnt; a++ {
			i := j + 1 + a
			bi := e.base(i)
			selAxpy(-w[a], w[:a+1], l[bi+j+1:bi+i+1])
		}
	}
	// Selected inversion, j = n−1 … 0: with w = L_{j+1…j+m, j} and W the
	// window S_{j+1…j+m, j+1…j+m}, S_{·,j} = −W w / L_jj below the diagonal
	// and S_jj = (1/L_jj − w·S_{·,j}) / L_jj.
	loss := 0.0
	for j := n - 1; j >= 0; j-- {
		cnt := min(n-1, j+m) - j
		ljj := l[e.base(j)+j]
		w := e.window(s, 1, j, cnt, y)
		p := 0.0
		for a := 0; a < cnt; a++ {
			v := -y[a] / ljj
			s[e.base(j+1+a)+j] = v
			sc[j*m+a] = v
			p += float64(w[a] * v)
		}
		sjj := (1/ljj - p) / ljj
		s[e.base(j)+j] = sjj
		loss += sjj
	}
	if gb == nil {
		return loss
	}
	// Reverse mode: S̄ = ∂loss/∂S (S_jj̄ = 1), then L̄, then K̄.
	sb, lb, wb, yb := e.sb, e.lb, e.wb, e.yb
	clear(sb)
	clear(lb)
	lbc := e.lbc
	for j := 0; j < n; j++ {
		sb[e.base(j)+j] = 1
	}
	for j := 0; j < n; j++ {
		cnt := min(n-1, j+m) - j
		bj := e.base(j)
		ljj := l[bj+j]
		w := lc[j*m : j*m+cnt]
		y := sc[j*m : j*m+cnt] // S_{j+1…j+cnt, j}
		sbar := sb[bj+j]
		p, q2 := 0.0, 0.0
		for a := 0; a < cnt; a++ {
			p += float64(w[a] * y[a])
		}
		lbar := sbar * (-2/(ljj*ljj*ljj) + p/(ljj*ljj))
		for a := 0; a < cnt; a++ {
			wb[a] = -sbar * y[a] / ljj
			sa := sb[e.base(j+1+a)+j] - float64(sbar*w[a])/ljj // adjoint of S_{j+1+a, j}
			q2 += float64(sa * y[a])
			yb[a] = -sa / ljj // adjoint of (W w)_a
		}
		lbar -= q2 / ljj
		lb[bj+j] += lbar
		// (W w): w̄ += W ȳ; W̄ += ȳ wᵀ + w ȳᵀ (stored lower, diagonal once).
		for a := 0; a < cnt; a++ {
			i := j + 1 + a
			bi := e.base(i)
			row := s[bi+j+1 : bi+i]
			srow := sb[bi+j+1 : bi+i]
			wb[a] += selRevRow(row, srow, w[:a], yb[:a], wb[:a], w[a], yb[a]) + float64(s[bi+i]*yb[a])
			sb[bi+i] += float64(yb[a] * w[a])
		}
		copy(lbc[j*m:j*m+cnt], wb[:cnt]) // L̄ below the diagonal: only this step adds to column j
	}
	// Reverse Cholesky, j = n−1 … 0, accumulating K̄ into k (K is no
	// longer needed). The update A_ik −= L_ij L_kj of the window passes Ā
	// through and takes (Ā + Āᵀ)·L_{·j} from L̄_{·j} (a window product as in
	// the selected inversion); then L_ij = A_ij / L_jj and L_jj = sqrt(A_jj).
	kb := k
	clear(kb)
	for j := n - 1; j >= 0; j-- {
		bj := e.base(j)
		ljj := l[bj+j]
		cnt := min(n-1, j+m) - j
		w := e.window(kb, 2, j, cnt, y)
		lbar := lb[bj+j]
		for a := 0; a < cnt; a++ {
			i := e.base(j+1+a) + j
			t := lbc[j*m+a] - y[a]
			kb[i] += t / ljj
			lbar -= t * w[a] / ljj
		}
		kb[bj+j] += lbar / (2 * ljj)
	}
	// H = K⁻² on the band: H_ij = −K̄_ij/2 (i ≠ j, stored once), H_ii = −K̄_ii.
	// G = R H Rᵀ on X's band: G_ab = Σ_{i∈[a−q,a]} Σ_{j∈[b−q,b]} R_ai H_ij R_bj,
	// |i − j| ≤ m always.
	// q = 1: i ∈ {a−1, a}, j ∈ {b−1, b}, in the order of the general sums.
	hAt := func(i, j int) float64 { // H_ij
		if i == j {
			return -kb[e.base(i)+j]
		}
		if i > j {
			return -kb[e.base(i)+j] / 2
		}
		return -kb[e.base(j)+i] / 2
	}
	for a := 0; a < n; a++ {
		ra, ra1 := r[2*a+1], r[2*a] // R_aa, R_{a,a−1}
		for d := 0; d < bw && d <= a; d++ {
			b := a - d
			rb, rb1 := r[2*b+1], r[2*b]
			v := 0.0
			if a >= 1 { // i = a−1
				u := 0.0
				if b >= 1 {
					u += float64(hAt(a-1, b-1) * rb1)
				}
				u += float64(hAt(a-1, b) * rb)
				v += float64(ra1 * u)
			}
			u := 0.0 // i = a
			if b >= 1 {
				u += float64(hAt(a, b-1) * rb1)
			}
			u += float64(hAt(a, b) * rb)
			v += float64(ra * u)
			gb[a*bw+bw-1-d] = v
		}
	}
	return loss
}

// window returns w = L_{j+1…j+cnt, j} (a slice of lc) and sets y = W w for
// the symmetric window W = V_{j+1…j+cnt, j+1…j+cnt} of v (stored lower by
// rows) with its diagonal multiplied by d: the selected inverse (v = S,
// d = 1) and the reverse Cholesky update (v = K̄, d = 2).
func (e *selEval) window(v []float64, d float64, j, cnt int, y []float64) []float64 {
	w := e.lc[j*e.m : j*e.m+cnt]
	clear(y[:cnt])
	for a := 0; a < cnt; a++ {
		i := j + 1 + a
		bi := e.base(i)
		y[a] += selFwdRow(v[bi+j+1:bi+i], w[:a], y[:a], w[a]) + float64(d*v[bi+i]*w[a])
	}
	return w
}

// selFwdRow returns Σ_b row[b]·w[b] and adds wa·row[b] to y[b] for
// b < len(row) (selFwdGo, or its AVX2 form).
func selFwdRow(row, w, y []float64, wa float64) float64 {
	if useAVX2 {
		return selFwdAVX2(row, w[:len(row)], y[:len(row)], wa)
	}
	return selFwdGo(row, w, y, wa)
}

// selRevRow is the adjoint of one selFwdRow row: it returns
// Σ_b row[b]·yb[b] (w̄_a), adds yba·row[b] to wb[b] and yba·w[b] + wa·yb[b]
// to srow[b] (selRevGo, or its AVX2 form).
func selRevRow(row, srow, w, yb, wb []float64, wa, yba float64) float64 {
	if useAVX2 {
		n := len(row)
		return selRevAVX2(row, srow[:n], w[:n], yb[:n], wb[:n], wa, yba)
	}
	return selRevGo(row, srow, w, yb, wb, wa, yba)
}

// lanes4 sums products as the AVX2 kernels do: lane b mod 4 over the full
// blocks of four, the rest into lane 0 in order, then (l1+l3) + (l0+l2).
type lanes4 [4]float64

func (l *lanes4) sum() float64 { return (l[1] + l[3]) + (l[0] + l[2]) }

func selFwdGo(row, w, y []float64, wa float64) float64 {
	n := len(row)
	w, y = w[:n], y[:n]
	var acc lanes4
	full := n &^ 3
	for b := 0; b < n; b++ {
		r := row[b]
		if b < full {
			acc[b&3] += float64(r * w[b])
		} else {
			acc[0] += float64(r * w[b])
		}
		y[b] += float64(wa * r)
	}
	return acc.sum()
}

func selRevGo(row, srow, w, yb, wb []float64, wa, yba float64) float64 {
	n := len(row)
	srow, w, yb, wb = srow[:n], w[:n], yb[:n], wb[:n]
	var acc lanes4
	full := n &^ 3
	for b := 0; b < n; b++ {
		r, y := row[b], yb[b]
		if b < full {
			acc[b&3] += float64(r * y)
		} else {
			acc[0] += float64(r * y)
		}
		wb[b] += float64(yba * r)
		srow[b] += float64(yba*w[b]) + float64(wa*y)
	}
	return acc.sum()
}

// selAxpy adds a·x to y (len(x) = len(y)), each product and sum rounded
// separately: selAxpyGo or its AVX2 form.
func selAxpy(a float64, x, y []float64) {
	if useAVX2 {
		selAxpyAVX2(a, x, y[:len(x)])
		return
	}
	selAxpyGo(a, x, y)
}

func selAxpyGo(a float64, x, y []float64) {
	y = y[:len(x)]
	for b, v := range x {
		y[b] += float64(a * v)
	}
}
