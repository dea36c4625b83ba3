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
//
// With two threads (GOMAXPROCS ≥ 2) and windows of parMinRows rows or
// more, each step's window pass is split over the caller and a helper
// goroutine that spins between passes (par): a pass takes microseconds,
// too little for channels. The split and the order of every sum depend
// only on the window, so the bits are the same with one thread or two.
type selEval struct {
	n, bw, m int
	// r[2i+1] = R_ii, r[2i] = R_{i,i−1} (q = 1).
	r []float64
	// Band storage by rows, width m+1: v[base(i)+j] = V_ij for
	// j ∈ [i−m, i], base(i) = i*(m+1)+m−i. K is formed into l (and
	// factored there); k holds K̄.
	k, l, s, sb []float64
	// lb: L̄'s diagonal.
	lb        []float64
	wb, y, yb []float64
	// Columns below the diagonal, column-major (c[j*m+a] = V_{j+1+a,j}):
	// of L (lc), of S (sc) and of L̄ (lbc, which has no other copy), so
	// that the column passes read them contiguously instead of one band
	// row apart (same values, same bits).
	lc, sc, lbc []float64
	// kc and sbc: the columns of K̄ and S̄ below the diagonal (as lc), kc
	// written by the steps of the reverse Cholesky, sbc by the passes of
	// the reverse selected inversion.
	kc, sbc []float64
	// ya, wba: the accumulators of the first part of the window passes
	// (par).
	ya, wba []float64

	// The window passes on two goroutines (par): the caller computes the
	// first rows [0, split) and the pair's helper goroutine, through
	// helperJob, the rest [split, cnt) of pass phase at step j.
	pair                 spinPair
	helperJob            func()
	phase, j, cnt, split int
	// The arguments of eval, for the passes that form K and G.
	xs, gb []float64
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
	e.k, e.l, e.s, e.sb = make([]float64, sz), make([]float64, sz), make([]float64, sz), make([]float64, sz)
	e.lb = make([]float64, n)
	e.wb, e.y, e.yb = make([]float64, e.m), make([]float64, e.m), make([]float64, e.m)
	e.ya, e.wba = make([]float64, e.m), make([]float64, e.m)
	e.lc, e.sc, e.lbc = make([]float64, n*e.m), make([]float64, n*e.m), make([]float64, n*e.m)
	e.kc, e.sbc = make([]float64, n*e.m), make([]float64, n*e.m)
	e.helperJob = func() { e.rows(e.phase, e.j, e.cnt, e.split, e.cnt, false) }
	return e
}

func (e *selEval) base(i int) int { return i*(e.m+1) + e.m - i }

// eval returns tr(AᵀA X⁻¹) for the band-stored X (xs[i*bw+d] = X_{i,i−d}),
// +Inf if X (equivalently K) is not positive definite, and, if gb != nil,
// writes G on the band into gb (gb[i*bw+bw−1−d] = G_{i,i−d}).
func (e *selEval) eval(xs, gb []float64) float64 {
	n, m := e.n, e.m
	// K = Rᵀ X R on the band: K_ij = Σ_{a∈[i,i+q]} Σ_{b∈[j,j+q]} R_ai X_ab R_bj
	// (i ≥ j, i − j ≤ m), with X_ab = 0 for |a − b| ≥ bw, formed into l
	// (factored in place below), with S̄'s and L̄'s start if gb != nil.
	e.xs, e.gb = xs, gb
	if m >= parMinRows {
		e.pair.start()
		defer e.pair.stop()
	}
	e.parRows(phaseK, n)
	if !e.cholesky() {
		return math.Inf(1)
	}
	loss := e.selectedInverse()
	if gb == nil {
		return loss
	}
	e.reverseSelected()
	e.reverseCholesky()
	// H = K⁻² on the band: H_ij = −K̄_ij/2 (i ≠ j, stored once), H_ii = −K̄_ii.
	// G = R H Rᵀ on X's band: G_ab = Σ_{i∈[a−q,a]} Σ_{j∈[b−q,b]} R_ai H_ij R_bj,
	// |i − j| ≤ m always.
	// q = 1: i ∈ {a−1, a}, j ∈ {b−1, b}, in the order of the general sums.
	e.parRows(phaseG, n)
	e.pair.stop()
	return loss
}

// cholesky factors K = L Lᵀ in place (eval's first step); false if K is
// not positive definite.
func (e *selEval) cholesky() bool {
	// Cholesky K = L Lᵀ, right-looking: column j of L from the current
	// trailing matrix, then the rank-one update of the next m rows (the
	// window). Products are converted to float64 before they are added
	// (here and below), so that no compiler fuses them into FMAs: the
	// bits do not depend on GOAMD64 or the architecture.
	//
	// The window passes go through par, which splits the rows of each
	// window into two parts that may run on two goroutines; each part's
	// sums are the same whichever goroutine computes it (bits independent
	// of the worker count).
	//
	// Column j of L below the diagonal lives in lc only: the pass of step
	// j−1 copies the entries of its rows (all but the last row of column j,
	// whose entry is still K's) into lc as it updates them, so that step j
	// reads them contiguously. The other passes do the same for S (from
	// sc), K̄ (from kc) and S̄ (into sbc): the goroutine that owns a row
	// writes its entries, and the steps read and write columns contiguously.
	n, m := e.n, e.m
	l, lc := e.l, e.lc
	for j := 0; j < n; j++ {
		bj := e.base(j)
		v := l[bj+j]
		if !(v > 0) {
			return false
		}
		ljj := math.Sqrt(v)
		l[bj+j] = ljj
		cnt := e.window(j)
		cov := e.covered(j)
		for a := 0; a < cov; a++ {
			lc[j*m+a] /= ljj
		}
		for a := cov; a < cnt; a++ {
			lc[j*m+a] = l[e.base(j+1+a)+j] / ljj
		}
		e.par(phaseChol, j, cnt)
	}
	return true
}

// selectedInverse forms S = K⁻¹ on the band from L (eval's second step)
// and returns its trace, the loss.
func (e *selEval) selectedInverse() float64 {
	// Selected inversion, j = n−1 … 0: with w = L_{j+1…j+m, j} and W the
	// window S_{j+1…j+m, j+1…j+m}, S_{·,j} = −W w / L_jj below the diagonal
	// and S_jj = (1/L_jj − w·S_{·,j}) / L_jj.
	n, m := e.n, e.m
	l, s, y, lc, sc := e.l, e.s, e.y, e.lc, e.sc
	loss := 0.0
	for j := n - 1; j >= 0; j-- {
		cnt := e.window(j)
		ljj := l[e.base(j)+j]
		e.par(phaseSel, j, cnt) // y = W w
		w := lc[j*m : j*m+cnt]
		p := 0.0
		cov := e.covered(j)
		for a := 0; a < cnt; a++ {
			v := -y[a] / ljj
			sc[j*m+a] = v // into s by the pass of step j−1 (a < cov)
			if a >= cov {
				s[e.base(j+1+a)+j] = v
			}
			p += float64(w[a] * v)
		}
		sjj := (1/ljj - p) / ljj
		s[e.base(j)+j] = sjj
		loss += sjj
	}
	return loss
}

// reverseSelected is the reverse mode of selectedInverse: from S̄ it
// accumulates L̄ (eval's gradient, first step).
func (e *selEval) reverseSelected() {
	// Reverse mode: S̄ = ∂loss/∂S (S_jj̄ = 1), then L̄, then K̄.
	// S̄ = I and L̄ = 0 at the start: set by the K pass.
	n, m := e.n, e.m
	l, lc, sc := e.l, e.lc, e.sc
	sb, lb, wb, yb := e.sb, e.lb, e.wb, e.yb
	lbc, sbc := e.lbc, e.sbc
	for j := 0; j < n; j++ {
		cnt := e.window(j)
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
		cov := e.covered(j)
		for a := 0; a < cnt; a++ {
			wb[a] = -sbar * y[a] / ljj
			sba := sbc[j*m+a] // S̄_{j+1+a, j}, copied by the pass of step j−1
			if a >= cov {
				sba = sb[e.base(j+1+a)+j]
			}
			sa := sba - float64(sbar*w[a])/ljj // adjoint of S_{j+1+a, j}
			q2 += float64(sa * y[a])
			yb[a] = -sa / ljj // adjoint of (W w)_a
		}
		lbar -= q2 / ljj
		lb[j] += lbar
		// (W w): w̄ += W ȳ; W̄ += ȳ wᵀ + w ȳᵀ (stored lower, diagonal once).
		e.par(phaseRev, j, cnt)
		copy(lbc[j*m:j*m+cnt], wb[:cnt]) // L̄ below the diagonal: only this step adds to column j
	}
}

// reverseCholesky is the reverse mode of cholesky: from L̄ it accumulates
// K̄ (eval's gradient, second step).
func (e *selEval) reverseCholesky() {
	// Reverse Cholesky, j = n−1 … 0, accumulating K̄ into k (K is no
	// longer needed). The update A_ik −= L_ij L_kj of the window passes Ā
	// through and takes (Ā + Āᵀ)·L_{·j} from L̄_{·j} (a window product as in
	// the selected inversion); then L_ij = A_ij / L_jj and L_jj = sqrt(A_jj).
	n, m := e.n, e.m
	l, y, lc, lb, lbc := e.l, e.y, e.lc, e.lb, e.lbc
	kb, kc := e.k, e.kc
	for j := n - 1; j >= 0; j-- {
		bj := e.base(j)
		ljj := l[bj+j]
		cnt := e.window(j)
		e.par(phaseRevChol, j, cnt) // y = W̄ w, W̄'s diagonal doubled
		w := lc[j*m : j*m+cnt]
		lbar := lb[j]
		cov := e.covered(j)
		for a := 0; a < cnt; a++ {
			t := lbc[j*m+a] - y[a]
			v := t / ljj
			kc[j*m+a] = v // into kb by the pass of step j−1 (a < cov)
			if a >= cov {
				kb[e.base(j+1+a)+j] = v
			}
			lbar -= t * w[a] / ljj
		}
		kb[bj+j] = lbar / (2 * ljj)
	}
}

// kRows forms the rows [lo, hi) of K = Rᵀ X R (xs as in eval) into l, and
// if the gradient is asked for (e.gb != nil) sets the same rows of S̄ to
// those of I and L̄'s diagonal to 0.
func (e *selEval) kRows(xs []float64, lo, hi int) {
	n, bw, m := e.n, e.bw, e.m
	k, r := e.l, e.r
	if e.gb != nil {
		sb := e.sb[lo*(m+1) : hi*(m+1)]
		clear(sb)
		for i := lo; i < hi; i++ {
			e.sb[e.base(i)+i] = 1
		}
		clear(e.lb[lo:hi])
	}
	// q = 1 (newSelEval): a ∈ {i, i+1}, b ∈ {j, j+1}, in the order of the
	// general sums (each partial sum starts from 0 and adds its terms in
	// order, so the bits are those of the loops over a and b).
	for i := lo; i < hi; i++ {
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
}

// gRows forms the rows [lo, hi) of G on X's band from K̄ (in k).
func (e *selEval) gRows(gb []float64, lo, hi int) {
	bw, r, kb := e.bw, e.r, e.k
	hAt := func(i, j int) float64 { // H_ij
		if i == j {
			return -kb[e.base(i)+j]
		}
		if i > j {
			return -kb[e.base(i)+j] / 2
		}
		return -kb[e.base(j)+i] / 2
	}
	for a := lo; a < hi; a++ {
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
}

// The window passes of eval, each a loop over the rows a of the window
// (rows j+1 … j+cnt). A row of the Cholesky update writes only its own row.
// The others take a product with the symmetric window stored lower by
// rows: row a adds its dot product to entry a of the result and its
// multiples to the entries before a, so the rows [0, split) accumulate into
// a result of their own (ya, wba), added to the result of the rows
// [split, cnt) at the end (par).
const (
	// L_{i,·} −= L_{ij} L_{·j} on the window.
	phaseChol = iota
	// y = W w, W the window of S, w = L_{·j}.
	phaseSel
	// w̄ += W ȳ and W̄ += ȳ wᵀ + w ȳᵀ (lower, diagonal once).
	phaseRev
	// y = W̄ w, W̄ the window of K̄ with its diagonal doubled.
	phaseRevChol
	// The rows of K (kRows) and of G (gRows), independent of each other.
	phaseK
	phaseG
)

// covered returns how many entries of column j below the diagonal the
// pass of step j−1 writes into the column-major copies (lc, sbc) or the
// band rows (s, k) as it goes over its window: those of the rows j+1 …
// j−1+cnt(j−1), all but the last row of a full window.
func (e *selEval) covered(j int) int {
	if j == 0 {
		return 0
	}
	return e.window(j-1) - 1
}

// window returns the number of rows of step j's window, j+1 … j+cnt.
func (e *selEval) window(j int) int { return min(e.n-1, j+e.m) - j }

// parRows runs pass phase (phaseK, phaseG) over the rows [0, n), split in
// two halves over the caller and the helper goroutine if there is one.
func (e *selEval) parRows(phase, n int) {
	e.phase, e.j, e.cnt, e.split = phase, 0, n, n/2
	g := e.pair.give(e.helperJob)
	e.rows(phase, 0, n, 0, n/2, true)
	e.pair.wait(g)
}

// rows computes the rows [lo, hi) of pass phase at step j: into ya or wba
// if first, else into y or wb.
func (e *selEval) rows(phase, j, cnt, lo, hi int, first bool) {
	m := e.m
	var w []float64 // L_{j+1…j+cnt, j}
	wide := cnt >= parMinRows
	if phase != phaseK && phase != phaseG {
		w = e.lc[j*m : j*m+cnt]
	}
	switch phase {
	case phaseK:
		e.kRows(e.xs, lo, hi)
	case phaseG:
		e.gRows(e.gb, lo, hi)
	case phaseChol:
		// Row i's entry in column j+1 is final once the row is updated:
		// copied into lc for step j+1 (a ≥ 1).
		l, lc := e.l, e.lc[(j+1)*m:]
		for a := lo; a < hi; a++ {
			i := j + 1 + a
			bi := e.base(i)
			selAxpy(-w[a], w[:a+1], l[bi+j+1:bi+i+1])
			if a > 0 {
				lc[a-1] = l[bi+j+1]
			}
		}
	case phaseSel, phaseRevChol:
		// Column j+1 of S (of K̄) was computed by step j+1 into sc (kc):
		// written into row i before the row is read (a ≥ 1).
		v, vc, d, y := e.s, e.sc, 1.0, e.y
		if phase == phaseRevChol {
			v, vc, d = e.k, e.kc, 2
		}
		vc = vc[(j+1)*m:]
		if first {
			y = e.ya
		}
		// All the copies first: a scalar store just before the kernel's
		// vector load of the same row stalls store forwarding (a third of
		// a pass at 64 bands).
		for a := max(lo, 1); a < hi; a++ {
			v[e.base(j+1+a)+j+1] = vc[a-1]
		}
		for a := lo; a < hi; a++ {
			i := j + 1 + a
			bi := e.base(i)
			y[a] += selFwdRow(v[bi+j+1:bi+i], w[:a], y[:a], w[a], wide) + float64(d*v[bi+i]*w[a])
		}
	case phaseRev:
		// Row i's S̄ entry in column j+1 is final once the row is updated:
		// copied into sbc for step j+1 (a ≥ 1).
		s, sb, yb, wb, sbc := e.s, e.sb, e.yb, e.wb, e.sbc[(j+1)*m:]
		if first {
			wb = e.wba
		}
		for a := lo; a < hi; a++ {
			i := j + 1 + a
			bi := e.base(i)
			row := s[bi+j+1 : bi+i]
			srow := sb[bi+j+1 : bi+i]
			wb[a] += selRevRow(row, srow, w[:a], yb[:a], wb[:a], w[a], yb[a], wide) + float64(s[bi+i]*yb[a])
			sb[bi+i] += float64(yb[a] * w[a])
			if a > 0 {
				sbc[a-1] = srow[0]
			}
		}
	}
}

// parMinRows is the smallest window whose passes are split in two (and
// summed in 16 lanes). A pass over a window of m rows costs O(m²), so
// below 128 rows it takes a microsecond or two and handing half of it to
// another goroutine gains little. Smaller windows are one part, so that
// their sums (and the strategies optimized before) are those of a single
// loop over the rows.
const parMinRows = 128

// splitShare is the first part's share of a window's rows. Row a costs
// about a (the triangle left of the diagonal), so the flops split evenly at
// 1/√2; the first part's many short rows, its separate result and the
// caller's work between passes make 0.68 the better balanced split (the
// caller then waits least for the helper).
const splitShare = 0.68

// splitRow is where a window of cnt rows is split. It depends only on cnt,
// not on the worker count.
func splitRow(cnt int) int {
	if cnt < parMinRows {
		return 0
	}
	return int(splitShare * float64(cnt))
}

// par runs pass phase at step j: the rows [split, cnt) on the helper
// goroutine if there is one (else on the caller, first), the
// rows [0, split) on the caller; then adds the first part's result to the
// second's.
func (e *selEval) par(phase, j, cnt int) {
	split := splitRow(cnt)
	switch phase {
	case phaseSel, phaseRevChol:
		clear(e.y[:cnt])
		clear(e.ya[:split])
	case phaseRev:
		clear(e.wba[:split])
	}
	if split == 0 {
		e.rows(phase, j, cnt, 0, cnt, false)
	} else {
		e.phase, e.j, e.cnt, e.split = phase, j, cnt, split
		g := e.pair.give(e.helperJob)
		e.rows(phase, j, cnt, 0, split, true)
		e.pair.wait(g)
	}
	switch phase {
	case phaseSel, phaseRevChol:
		for a, v := range e.ya[:split] {
			e.y[a] += v
		}
	case phaseRev:
		for a, v := range e.wba[:split] {
			e.wb[a] += v
		}
	}
}

// selFwdRow returns Σ_b row[b]·w[b] and adds wa·row[b] to y[b] for
// b < len(row) (selFwdGo, or its AVX2 form). The sum runs in four lanes,
// or in 16 if wide (lanes): the windows of parMinRows rows and more are
// wide, where one accumulator's chain of adds would set the pace; smaller
// windows keep the four lanes, and with them the bits of the strategies
// optimized with fewer bands.
func selFwdRow(row, w, y []float64, wa float64, wide bool) float64 {
	if useAVX2 {
		n := len(row)
		return selFwdAVX2(row, w[:n], y[:n], wa, wide)
	}
	return selFwdGo(row, w, y, wa, wide)
}

// selRevRow is the adjoint of one selFwdRow row: it returns
// Σ_b row[b]·yb[b] (w̄_a), adds yba·row[b] to wb[b] and yba·w[b] + wa·yb[b]
// to srow[b] (selRevGo, or its AVX2 form).
func selRevRow(row, srow, w, yb, wb []float64, wa, yba float64, wide bool) float64 {
	if useAVX2 {
		n := len(row)
		return selRevAVX2(row, srow[:n], w[:n], yb[:n], wb[:n], wa, yba, wide)
	}
	return selRevGo(row, srow, w, yb, wb, wa, yba, wide)
}

// lanes sums products as the AVX2 kernels do. Four lanes: lane b mod 4
// over the full blocks of four, the last 0–3 products into lane 0 in order,
// then (l1+l3) + (l0+l2). Sixteen (wide): lane b mod 16 over the full
// blocks of 16, then the remaining full blocks of four into lanes 0–3 and
// the last 0–3 products into lane 0, reduced as
// v_l = (a_l + a_{4+l}) + (a_{8+l} + a_{12+l}), then (v1+v3) + (v0+v2).
// Four lanes are the wide sum with no block of 16 (lanes 4–15 stay +0, and
// x + 0 = x for every lane value a sum from +0 can take).
type lanes struct {
	a       [16]float64
	n16, n4 int
}

func newLanes(n int, wide bool) lanes {
	l := lanes{n4: n &^ 3}
	if wide {
		l.n16 = n &^ 15
	}
	return l
}

func (l *lanes) add(b int, p float64) {
	switch {
	case b < l.n16:
		l.a[b&15] += p
	case b < l.n4:
		l.a[b&3] += p
	default:
		l.a[0] += p
	}
}

func (l *lanes) sum() float64 {
	var v [4]float64
	for k := range v {
		v[k] = (l.a[k] + l.a[4+k]) + (l.a[8+k] + l.a[12+k])
	}
	return (v[1] + v[3]) + (v[0] + v[2])
}

func selFwdGo(row, w, y []float64, wa float64, wide bool) float64 {
	n := len(row)
	w, y = w[:n], y[:n]
	acc := newLanes(n, wide)
	for b := 0; b < n; b++ {
		r := row[b]
		acc.add(b, float64(r*w[b]))
		y[b] += float64(wa * r)
	}
	return acc.sum()
}

func selRevGo(row, srow, w, yb, wb []float64, wa, yba float64, wide bool) float64 {
	n := len(row)
	srow, w, yb, wb = srow[:n], w[:n], yb[:n], wb[:n]
	acc := newLanes(n, wide)
	for b := 0; b < n; b++ {
		r, y := row[b], yb[b]
		acc.add(b, float64(r*y))
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
