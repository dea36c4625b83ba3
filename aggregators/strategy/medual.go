package strategy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/mat"
)

// Multi-epoch MF through its Lagrange dual.
//
// The multi-epoch problem (MultiEpoch, MultiEpochUnequal) is
//
//	min tr(M X⁻¹), M = AᵀA, over X ≻ 0 whose pattern blocks X_π (π a
//	residue class mod b, X_π the |π|×|π| submatrix on π) are I (equal column
//	norms) or diagonal with trace τ = ⌈n/b⌉ (unequal).
//
// Its multiplier Λ lives on the same blocks: b blocks of k̂ = ⌈n/b⌉ rows,
// against the n² entries of X. For a multiplier Λ ≻ 0 the Lagrangian is
// minimized by X(Λ) = Λ^{-½} W Λ^{-½}, W = (Λ^½ M Λ^½)^½ (X(Λ) Λ X(Λ) =
// M), and tr W = ‖A Λ^½‖_* gives the dual bound (tr W)²/c(Λ) (certificate.go).
// The equal-column-norm optimum is the fixed point Λ = P(W), P the part on
// the pattern blocks (P(X(Λ)) = I), which is the fixed point of Denisov et
// al. 2022 with blocks for the diagonal; it is iterated here with Anderson
// acceleration in log Λ, as OptimalSingle does.
//
// What makes an iteration cheap is that only P(W) and tr W are needed and
// that W = K^{-½} for K = Λ^{-½} M⁻¹ Λ^{-½}, where M⁻¹ = A⁻¹A⁻ᵀ is
// tridiagonal for prefix sums (with or without a learning-rate schedule).
// With the rows of K ordered by residue class, and the classes in the order
// 0, b−1, 1, b−2, … (the cyclic chain of classes folded), K is banded with
// about 3k̂ bands. K^{-½} = (2/π)∫₀^∞ (K + t²I)⁻¹ dt is evaluated by the
// trapezoidal rule in log t (with the tails summed in closed form to first
// order), each node a banded Cholesky factorization of K + sI and the
// selected inverse of its band (Takahashi's recurrences): O(nodes·n·k̂²)
// per iteration instead of the O(n³) of a dense evaluation. The rational
// function the quadrature applies to K is checked against λ^{-½} on the
// interval that contains K's spectrum (Gershgorin above; 1/tr(MΛ) below);
// its relative error δ enters the certificate.
//
// The unequal problem is the equal one for M_D = D⁻¹ M D⁻¹ with X = D X̂ D,
// D = diag(√t) and t the diagonal of X (M_D⁻¹ = D M⁻¹ D stays tridiagonal):
// its optimum has Λ_jj = Λ̂_jj/t_j constant on each class, and the iteration
// updates t_j ∝ √(t_j Λ̂_jj) (normalized to τ per class) together with Λ̂.
//
// X itself is formed once at the end: K^{-½} densely by the same quadrature
// (n solves with each node's band factor), then X = D Λ̂^{-½} W Λ̂^{-½} D,
// with each pattern block rescaled exactly to I (or its diagonal) so that X
// is feasible. The certificate is the dense tr(M X⁻¹) of that X against the
// dual bound of the last multiplier.

// meDualMaxK is the largest ⌈n/b⌉ for which multi-epoch MF goes through the
// dual (the bands of K grow as 3⌈n/b⌉ and each node costs n·(3⌈n/b⌉)²).
const meDualMaxK = 32

// useMEDual reports whether multi-epoch MF for w and b goes through the
// dual: n ≥ selMinN (below, the L-BFGS of the committed runs stays),
// A⁻¹ bidiagonal (prefix sums, with or without a schedule), b > 1 and
// ⌈n/b⌉ ≤ meDualMaxK.
func useMEDual(w *Workload, b int) bool {
	if !meDualShape(w.N(), b) {
		return false
	}
	_, _, ok := w.bidiagInverse()
	return ok
}

// meDualShape is the size part of useMEDual (n and b; the workload aside).
func meDualShape(n, b int) bool { return meDualShapeF(float64(n), float64(b)) }

// meDualShapeF is meDualShape in float64 (memory estimates take any n).
func meDualShapeF(n, b float64) bool {
	return n >= selMinN && b >= 2 && math.Ceil(n/b) <= meDualMaxK
}

// meDual holds the structure of one multi-epoch problem.
type meDual struct {
	w       *Workload
	n, nc   int       // rounds; classes (min(b, n))
	cls     [][]int   // rounds of each class, ascending
	cof     []int     // class of each round
	idx     []int     // index of each round within its class
	start   []int     // first position of each class
	bw      int       // half-bandwidth of K in position order
	td, te  []float64 // M⁻¹: diagonal, and (M⁻¹)_{t,t−1} at te[t−1]
	mdiag   []float64 // M_tt
	unequal bool
	tau     float64 // per-class trace of X (unequal)
}

func newMEDual(w *Workload, b int) *meDual {
	n := w.N()
	nc := min(b, n)
	d := &meDual{w: w, n: n, nc: nc, cls: make([][]int, nc), cof: make([]int, n), idx: make([]int, n), start: make([]int, nc)}
	for t := 0; t < n; t++ {
		c := t % b
		d.cof[t], d.idx[t] = c, len(d.cls[c])
		d.cls[c] = append(d.cls[c], t)
	}
	// Fold the cyclic chain of classes (c ↔ c+1, nc−1 ↔ 0): 0, nc−1, 1, nc−2, …
	order := make([]int, 0, nc)
	for lo, hi := 0, nc-1; lo <= hi; lo, hi = lo+1, hi-1 {
		order = append(order, lo)
		if hi != lo {
			order = append(order, hi)
		}
	}
	p := 0
	for _, c := range order {
		d.start[c] = p
		p += len(d.cls[c])
	}
	span := func(c1, c2 int) int {
		lo := min(d.start[c1], d.start[c2])
		hi := max(d.start[c1]+len(d.cls[c1]), d.start[c2]+len(d.cls[c2])) - 1
		return hi - lo
	}
	for c := 0; c < nc; c++ {
		d.bw = max(d.bw, span(c, c), span(c, (c+1)%nc))
	}
	bd, bs, _ := w.bidiagInverse()
	d.td, d.te = make([]float64, n), make([]float64, max(n-1, 0))
	for t := 0; t < n; t++ {
		d.td[t] = bd[t] * bd[t]
		if t > 0 {
			d.td[t] += bs[t-1] * bs[t-1]
			d.te[t-1] = bs[t-1] * bd[t-1]
		}
	}
	d.mdiag = make([]float64, n)
	ar := w.A().RawTriangular()
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			a := ar.Data[i*ar.Stride+j]
			d.mdiag[j] += a * a
		}
	}
	return d
}

// pos returns the position of round t in K's order.
func (d *meDual) pos(t int) int { return d.start[d.cof[t]] + d.idx[t] }

// symBlock is a small symmetric matrix, row-major.
type symBlock struct {
	k int
	a []float64
}

// blockFn returns V f(Λ) Vᵀ for the symmetric block s = V Λ Vᵀ; false if
// an eigenvalue is not positive (pos) or f of one is not finite.
func blockFn(s symBlock, f func(float64) float64, pos bool) (symBlock, bool) {
	k := s.k
	var es mat.EigenSym
	if !es.Factorize(mat.NewSymDense(k, append([]float64(nil), s.a...)), true) {
		return symBlock{}, false
	}
	vals := es.Values(nil)
	var v mat.Dense
	es.VectorsTo(&v)
	out := symBlock{k: k, a: make([]float64, k*k)}
	for l, ev := range vals {
		fv := f(ev)
		if (pos && !(ev > 0)) || math.IsInf(fv, 0) || math.IsNaN(fv) {
			return symBlock{}, false
		}
		for i := 0; i < k; i++ {
			vi := v.At(i, l) * fv
			for j := 0; j < k; j++ {
				out.a[i*k+j] += vi * v.At(j, l)
			}
		}
	}
	return out, true
}

// mulBlocks returns a·b·c for k×k blocks.
func mulBlocks(a, b, c symBlock) symBlock {
	k := a.k
	ab := make([]float64, k*k)
	for i := 0; i < k; i++ {
		for l := 0; l < k; l++ {
			x := a.a[i*k+l]
			for j := 0; j < k; j++ {
				ab[i*k+j] += x * b.a[l*k+j]
			}
		}
	}
	out := symBlock{k: k, a: make([]float64, k*k)}
	for i := 0; i < k; i++ {
		for l := 0; l < k; l++ {
			x := ab[i*k+l]
			for j := 0; j < k; j++ {
				out.a[i*k+j] += x * c.a[l*k+j]
			}
		}
	}
	for i := 0; i < k; i++ { // symmetrize
		for j := 0; j < i; j++ {
			m := (out.a[i*k+j] + out.a[j*k+i]) / 2
			out.a[i*k+j], out.a[j*k+i] = m, m
		}
	}
	return out
}

// kBand forms K = R M_D⁻¹ R in band storage (kb[p*(bw+1)+q−p+bw] = K_pq,
// p−bw ≤ q ≤ p), for R = Λ̂^{-½} (blocks per class, in class order) and
// M_D⁻¹ = D M⁻¹ D, D = diag(sq).
func (d *meDual) kBand(kb []float64, rinv []symBlock, sq []float64) {
	for i := range kb {
		kb[i] = 0
	}
	w1 := d.bw + 1
	add := func(t, u int, v float64) { // K += R e_t v e_uᵀ R (both triangles' share)
		ct, cu := d.cof[t], d.cof[u]
		rt, ru := rinv[ct], rinv[cu]
		at, au := d.idx[t], d.idx[u]
		st, su := d.start[ct], d.start[cu]
		for m := 0; m < rt.k; m++ {
			x := rt.a[m*rt.k+at] * v
			p := st + m
			for m2 := 0; m2 < ru.k; m2++ {
				q := su + m2
				if q <= p {
					kb[p*w1+q-p+d.bw] += x * ru.a[au*ru.k+m2]
				}
			}
		}
	}
	for t := 0; t < d.n; t++ {
		add(t, t, d.td[t]*sq[t]*sq[t])
		if t > 0 {
			v := d.te[t-1] * sq[t] * sq[t-1]
			add(t, t-1, v)
			add(t-1, t, v)
		}
	}
}

// bandChol factors K + sI = L Lᵀ in band storage (same layout); false if
// not positive definite.
func bandChol(l, kb []float64, n, bw int, s float64) bool {
	w1 := bw + 1
	for p := 0; p < n; p++ {
		rp := l[p*w1 : p*w1+w1]
		for q := max(0, p-bw); q <= p; q++ {
			v := kb[p*w1+q-p+bw]
			// Σ_{r=max(0,p−bw)}^{q−1} L_pr L_qr
			r0 := max(0, p-bw)
			rq := l[q*w1 : q*w1+w1]
			for r := r0; r < q; r++ {
				v -= rp[r-p+bw] * rq[r-q+bw]
			}
			if q == p {
				v += s
				if !(v > 0) {
					return false
				}
				rp[bw] = math.Sqrt(v)
			} else {
				rp[q-p+bw] = v / rq[bw]
			}
		}
	}
	return true
}

// selInv writes the band of (L Lᵀ)⁻¹ into z (same layout): Takahashi's
// recurrences, O(n·bw²).
func selInv(z, l []float64, n, bw int) {
	w1 := bw + 1
	at := func(i, k int) float64 { // Z_ik, |i−k| ≤ bw
		if k <= i {
			return z[i*w1+k-i+bw]
		}
		return z[k*w1+i-k+bw]
	}
	for j := n - 1; j >= 0; j-- {
		top := min(n-1, j+bw)
		ljj := l[j*w1+bw]
		for i := top; i > j; i-- {
			s := 0.0
			for k := j + 1; k <= top; k++ {
				s += at(i, k) * l[k*w1+j-k+bw]
			}
			z[i*w1+j-i+bw] = -s / ljj
		}
		s := 0.0
		for k := j + 1; k <= top; k++ {
			s += z[k*w1+j-k+bw] * l[k*w1+j-k+bw]
		}
		z[j*w1+bw] = (1/ljj - s) / ljj
	}
}

// quad is the quadrature K^{-½} ≈ Σ_j c_j (K + s_j I)⁻¹ + c₀ K⁻¹ + c_∞ I.
type quad struct {
	s, c        []float64
	c0, cinf    float64
	relErr      float64 // max |r(λ)√λ − 1| on [lo, hi], sampled
	lo, hi      float64
	h, uLo, uHi float64
}

// newQuad builds the trapezoidal rule in u = log t for λ ∈ [lo, hi] with
// relative error below tol (checked on 4000 log-spaced points and the ends).
func newQuad(lo, hi, tol float64) quad {
	h := math.Pi * math.Pi / math.Log(4/tol)
	tail := math.Cbrt(tol) // first-order tails: error ≈ x³/3, x = e^{−L}
	L := -math.Log(tail)
	for {
		q := quad{lo: lo, hi: hi, h: h, uLo: 0.5*math.Log(lo) - L, uHi: 0.5*math.Log(hi) + L}
		nn := int(math.Ceil((q.uHi - q.uLo) / h))
		q.uHi = q.uLo + float64(nn)*h
		for j := 0; j <= nn; j++ {
			u := q.uLo + float64(j)*h
			q.s = append(q.s, math.Exp(2*u))
			q.c = append(q.c, 2/math.Pi*h*math.Exp(u))
		}
		q.c0 = 2 / math.Pi * h * math.Exp(q.uLo) / math.Expm1(h)
		q.cinf = 2 / math.Pi * h * math.Exp(-q.uHi) / math.Expm1(h)
		q.relErr = q.check()
		if q.relErr <= tol || h < 1e-3 {
			return q
		}
		h *= 0.85
		L += 0.5
	}
}

// eval returns r(λ), the scalar function the quadrature applies.
func (q *quad) eval(lam float64) float64 {
	r := q.c0/lam + q.cinf
	for j, s := range q.s {
		r += q.c[j] / (lam + s)
	}
	return r
}

func (q *quad) check() float64 {
	worst := 0.0
	const m = 4000
	for i := 0; i <= m; i++ {
		lam := q.lo * math.Pow(q.hi/q.lo, float64(i)/m)
		worst = math.Max(worst, math.Abs(q.eval(lam)*math.Sqrt(lam)-1))
	}
	return worst
}

// meState is one iterate: the multiplier blocks Λ̂ (class order) and the
// diagonal t of X (all ones for equal column norms).
type meState struct {
	lam []symBlock
	t   []float64
}

// meEval is what one evaluation of the dual gives.
type meEval struct {
	w    []symBlock // P(W), W = K^{-½}
	trW  float64
	rinv []symBlock // Λ̂^{-½}
	q    quad
	res  float64 // max |P(X̂(Λ̂)) − I|
}

// eval computes P(W) and tr W for st through the quadrature.
func (d *meDual) eval(st *meState, tol float64) (*meEval, error) {
	n, bw, w1 := d.n, d.bw, d.bw+1
	ev := &meEval{w: make([]symBlock, d.nc)}
	kb, rinv, err := d.kOf(st)
	if err != nil {
		return nil, err
	}
	ev.rinv = rinv
	lo, hi := d.spectrum(kb, st)
	ev.q = newQuad(lo, hi, tol)
	q := &ev.q
	// Nodes in parallel, results reduced in node order.
	nodes := len(q.s) + 1 // + the K⁻¹ tail
	per := make([][]float64, nodes)
	var failed error
	var mu sync.Mutex
	workers := min(runtime.GOMAXPROCS(0), 2)
	next := make(chan int, nodes)
	for j := 0; j < nodes; j++ {
		next <- j
	}
	close(next)
	var wg sync.WaitGroup
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := make([]float64, n*w1)
			z := make([]float64, n*w1)
			for j := range next {
				s := 0.0
				if j < len(q.s) {
					s = q.s[j]
				}
				if !bandChol(l, kb, n, bw, s) {
					mu.Lock()
					failed = errors.New("strategy: multi-epoch dual: K not positive definite")
					mu.Unlock()
					continue
				}
				selInv(z, l, n, bw)
				out := make([]float64, 0, n*8)
				for c := 0; c < d.nc; c++ {
					k, s0 := len(d.cls[c]), d.start[c]
					for a := 0; a < k; a++ {
						for b := 0; b <= a; b++ {
							out = append(out, z[(s0+a)*w1+b-a+bw])
						}
					}
				}
				per[j] = out
			}
		}()
	}
	wg.Wait()
	if failed != nil {
		return nil, failed
	}
	acc := make([]float64, len(per[0]))
	for j := 0; j < nodes; j++ {
		c := q.c0
		if j < len(q.s) {
			c = q.c[j]
		}
		for i, v := range per[j] {
			acc[i] += c * v
		}
	}
	i := 0
	for c := 0; c < d.nc; c++ {
		k := len(d.cls[c])
		blk := symBlock{k: k, a: make([]float64, k*k)}
		for a := 0; a < k; a++ {
			for b := 0; b <= a; b++ {
				v := acc[i]
				i++
				if a == b {
					v += q.cinf
					ev.trW += v
				}
				blk.a[a*k+b], blk.a[b*k+a] = v, v
			}
		}
		ev.w[c] = blk
		x := mulBlocks(ev.rinv[c], blk, ev.rinv[c])
		for a := 0; a < k; a++ {
			for b := 0; b < k; b++ {
				want := 0.0
				if a == b {
					want = 1
				}
				ev.res = math.Max(ev.res, math.Abs(x.a[a*k+b]-want))
			}
		}
	}
	return ev, nil
}

// MEDualOptions controls the dual iteration (tests and benchmarks).
type meDualOptions struct {
	maxIter  int
	resTol   float64 // stop when max |P(X̂) − I| (and, unequal, the class spread of Λ_jj) is below
	quadTol  float64
	progress func(iter int, res, bound float64)
}

// solve runs the fixed point and returns the final state and evaluation.
func (d *meDual) solve(ctx context.Context, o meDualOptions) (*meState, *meEval, int, error) {
	n := d.n
	st := &meState{lam: make([]symBlock, d.nc), t: make([]float64, n)}
	for t := range st.t {
		st.t[t] = 1
		if d.unequal {
			st.t[t] = d.tau / float64(len(d.cls[d.cof[t]]))
		}
	}
	for c := range st.lam {
		k := len(d.cls[c])
		st.lam[c] = symBlock{k: k, a: make([]float64, k*k)}
		for a, t := range d.cls[c] {
			st.lam[c].a[a*k+a] = math.Sqrt(d.mdiag[t]) / st.t[t]
		}
	}
	dim := 0
	for c := range st.lam {
		k := len(d.cls[c])
		dim += k * (k + 1) / 2
	}
	if d.unequal {
		dim += n
	}
	acc := newAndersonVec(dim, 5)
	u := make([]float64, dim)
	g := make([]float64, dim)
	var ev *meEval
	it := 0
	for it = 1; ; it++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, it, fmt.Errorf("strategy: multi-epoch dual interrupted: %w", err)
		}
		var err error
		ev, err = d.eval(st, o.quadTol)
		if err != nil {
			return nil, nil, it, err
		}
		res := ev.res
		tnew := st.t
		if d.unequal {
			tnew = make([]float64, n)
			for c, ts := range d.cls {
				k := len(ts)
				for a, t := range ts {
					tnew[t] = math.Sqrt(st.t[t] * st.lam[c].a[a*k+a])
				}
			}
			d.normalizeT(tnew)
			for t := range tnew {
				res = math.Max(res, math.Abs(tnew[t]/st.t[t]-1))
			}
		}
		if o.progress != nil {
			o.progress(it, res, ev.trW*ev.trW/d.cost(st))
		}
		if res <= o.resTol || it >= o.maxIter {
			break
		}
		if !d.pack(st.lam, st.t, u) || !d.pack(ev.w, tnew, g) {
			return nil, nil, it, errors.New("strategy: multi-epoch dual: multiplier not positive definite")
		}
		acc.next(u, g)
		if !d.unpack(st, u) {
			acc.reset()
			if !d.unpack(st, g) {
				return nil, nil, it, errors.New("strategy: multi-epoch dual: multiplier not positive definite")
			}
		}
	}
	return st, ev, it, nil
}

// pack writes the iterate (blocks, t) in solve's log coordinates to out:
// the lower triangle of each block's matrix logarithm (off-diagonal entries
// times √2), then log t when the column norms are unequal. false if a block
// is not positive definite.
func (d *meDual) pack(blocks []symBlock, t []float64, out []float64) bool {
	i := 0
	for _, b := range blocks {
		lg, ok := blockFn(b, math.Log, true)
		if !ok {
			return false
		}
		for a := 0; a < b.k; a++ {
			for c := 0; c <= a; c++ {
				f := 1.0
				if a != c {
					f = math.Sqrt2
				}
				out[i] = f * lg.a[a*b.k+c]
				i++
			}
		}
	}
	if d.unequal {
		for j := range t {
			out[i+j] = math.Log(t[j])
		}
	}
	return true
}

// unpack sets st from log coordinates u (pack's inverse) and normalizes t.
// false if a block's exponential fails.
func (d *meDual) unpack(st *meState, u []float64) bool {
	i := 0
	for c := range st.lam {
		k := len(d.cls[c])
		h := symBlock{k: k, a: make([]float64, k*k)}
		for a := 0; a < k; a++ {
			for b := 0; b <= a; b++ {
				f := 1.0
				if a != b {
					f = 1 / math.Sqrt2
				}
				h.a[a*k+b], h.a[b*k+a] = f*u[i], f*u[i]
				i++
			}
		}
		e, ok := blockFn(h, math.Exp, false)
		if !ok {
			return false
		}
		st.lam[c] = e
	}
	if d.unequal {
		for j := range st.t {
			st.t[j] = math.Exp(u[i+j])
		}
		d.normalizeT(st.t)
	}
	return true
}

// normalizeT rescales t to sum τ on every class.
func (d *meDual) normalizeT(t []float64) {
	for _, ts := range d.cls {
		s := 0.0
		for _, j := range ts {
			s += t[j]
		}
		for _, j := range ts {
			t[j] *= d.tau / s
		}
	}
}

// cost is c(Λ̂) of the scaled problem: tr Λ̂.
func (d *meDual) cost(st *meState) float64 {
	c := 0.0
	for _, b := range st.lam {
		for a := 0; a < b.k; a++ {
			c += b.a[a*b.k+a]
		}
	}
	return c
}

// andersonVec is Anderson acceleration (type II) of u ← G(u) on plain vectors.
type andersonVec struct {
	n, m int
	u, g [][]float64
}

func newAndersonVec(n, m int) *andersonVec { return &andersonVec{n: n, m: m} }

func (a *andersonVec) reset() { a.u, a.g = a.u[:0], a.g[:0] }

// next overwrites u (the current iterate) with the next one, given g =
// G(u); it reports whether that is an accelerated step (false: u = g, the
// plain step, because there is no history yet or the least-squares problem
// failed, which also clears the history).
func (a *andersonVec) next(u, g []float64) bool {
	a.u = append(a.u, append([]float64(nil), u...))
	a.g = append(a.g, append([]float64(nil), g...))
	if len(a.u) > a.m+1 {
		a.u, a.g = a.u[1:], a.g[1:]
	}
	k := len(a.u) - 1
	if k == 0 {
		copy(u, g)
		return false
	}
	n := a.n
	df := mat.NewDense(n, k, nil)
	fk := mat.NewVecDense(n, nil)
	for i := 0; i < n; i++ {
		fk.SetVec(i, a.g[k][i]-a.u[k][i])
		for j := 0; j < k; j++ {
			df.Set(i, j, (a.g[j+1][i]-a.u[j+1][i])-(a.g[j][i]-a.u[j][i]))
		}
	}
	var gamma mat.VecDense
	if err := gamma.SolveVec(df, fk); err != nil {
		a.reset()
		copy(u, g)
		return false
	}
	for i := 0; i < n; i++ {
		x := a.g[k][i]
		for j := 0; j < k; j++ {
			x -= gamma.AtVec(j) * (a.g[j+1][i] - a.g[j][i])
		}
		u[i] = x
	}
	return true
}

// denseW returns K^{-½} (n×n, row-major, position order) by the quadrature
// q: every column through every node's band factor, columns in parallel and
// the nodes summed in order for each (the same bits for any worker count).
func (d *meDual) denseW(ctx context.Context, kb []float64, q quad) ([]float64, error) {
	n, bw, w1 := d.n, d.bw, d.bw+1
	nodes := len(q.s) + 1
	ls := make([][]float64, nodes)
	cs := make([]float64, nodes)
	for j := range ls {
		s, c := 0.0, q.c0
		if j < len(q.s) {
			s, c = q.s[j], q.c[j]
		}
		ls[j], cs[j] = make([]float64, n*w1), c
		if !bandChol(ls[j], kb, n, bw, s) {
			return nil, errors.New("strategy: multi-epoch dual: K not positive definite")
		}
	}
	wd := make([]float64, n*n)
	next := make(chan int, n)
	for col := 0; col < n; col++ {
		next <- col
	}
	close(next)
	var wg sync.WaitGroup
	for g := 0; g < min(runtime.GOMAXPROCS(0), 2); g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			y := make([]float64, n)
			for col := range next {
				if ctx.Err() != nil {
					continue
				}
				out := wd[col*n : col*n+n] // row col holds column col (p ≥ col)
				for j, l := range ls {
					// y = L⁻¹ e_col (rows ≥ col), then z = L⁻ᵀ y in place.
					for p := col; p < n; p++ {
						v := 0.0
						if p == col {
							v = 1
						}
						rp := l[p*w1 : p*w1+w1]
						for r := max(col, p-bw); r < p; r++ {
							v -= rp[r-p+bw] * y[r]
						}
						y[p] = v / rp[bw]
					}
					for p := n - 1; p >= col; p-- {
						v := y[p]
						for r := p + 1; r <= min(n-1, p+bw); r++ {
							v -= l[r*w1+p-r+bw] * y[r]
						}
						y[p] = v / l[p*w1+bw]
					}
					c := cs[j]
					for p := col; p < n; p++ {
						out[p] += c * y[p]
					}
				}
				out[col] += q.cinf
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("strategy: multi-epoch dual interrupted: %w", err)
	}
	for p := 0; p < n; p++ { // mirror: wd[p][q] for q < p from row q
		for c := 0; c < p; c++ {
			wd[p*n+c] = wd[c*n+p]
		}
	}
	return wd, nil
}

// formX returns the feasible X for the state st: X = D F W Fᵀ D in round
// order, F = E Λ̂^{-½} per class with E = (Λ̂^{-½} P(W) Λ̂^{-½})^{-½}, so that
// every pattern block of F W Fᵀ is I (set exactly).
func (d *meDual) formX(ctx context.Context, st *meState, tol float64) (*mat.SymDense, error) {
	n := d.n
	kb, rinv, err := d.kOf(st)
	if err != nil {
		return nil, err
	}
	sq := make([]float64, n)
	for t := range sq {
		sq[t] = math.Sqrt(st.t[t])
	}
	lo, hi := d.spectrum(kb, st)
	wd, err := d.denseW(ctx, kb, newQuad(lo, hi, tol))
	if err != nil {
		return nil, err
	}
	// F per class.
	f := make([]symBlock, d.nc) // not symmetric; row-major k×k
	for c := range f {
		k, s0 := len(d.cls[c]), d.start[c]
		wb := symBlock{k: k, a: make([]float64, k*k)}
		for a := 0; a < k; a++ {
			for b := 0; b < k; b++ {
				wb.a[a*k+b] = wd[(s0+a)*n+s0+b]
			}
		}
		z := mulBlocks(rinv[c], wb, rinv[c])
		e, ok := blockFn(z, func(x float64) float64 { return 1 / math.Sqrt(x) }, true)
		if !ok {
			return nil, errors.New("strategy: multi-epoch dual: pattern block not positive definite")
		}
		fc := symBlock{k: k, a: make([]float64, k*k)}
		for a := 0; a < k; a++ {
			for l := 0; l < k; l++ {
				x := e.a[a*k+l]
				for b := 0; b < k; b++ {
					fc.a[a*k+b] += x * rinv[c].a[l*k+b]
				}
			}
		}
		f[c] = fc
	}
	// Y = F W (rows), then X = Y Fᵀ (columns), in position order.
	y := make([]float64, n*n)
	for c := range f {
		k, s0 := len(d.cls[c]), d.start[c]
		for a := 0; a < k; a++ {
			yr := y[(s0+a)*n : (s0+a)*n+n]
			for l := 0; l < k; l++ {
				x := f[c].a[a*k+l]
				wr := wd[(s0+l)*n : (s0+l)*n+n]
				for j, v := range wr {
					yr[j] += x * v
				}
			}
		}
	}
	xp := wd // reuse
	for i := range xp {
		xp[i] = 0
	}
	for r := 0; r < n; r++ {
		yr, xr := y[r*n:r*n+n], xp[r*n:r*n+n]
		for c := range f {
			k, s0 := len(d.cls[c]), d.start[c]
			for b := 0; b < k; b++ {
				v := 0.0
				for l := 0; l < k; l++ {
					v += yr[s0+l] * f[c].a[b*k+l]
				}
				xr[s0+b] = v
			}
		}
	}
	x := mat.NewSymDense(n, nil)
	for t := 0; t < n; t++ {
		pt := d.pos(t)
		for u := 0; u <= t; u++ {
			pu := d.pos(u)
			v := (xp[pt*n+pu] + xp[pu*n+pt]) / 2
			if d.cof[t] == d.cof[u] {
				v = 0
				if t == u {
					v = 1
				}
			}
			x.SetSym(t, u, sq[t]*v*sq[u])
		}
	}
	return x, nil
}

// kOf returns K's band for st and the blocks Λ̂^{-½} it is formed with.
func (d *meDual) kOf(st *meState) (kb []float64, rinv []symBlock, err error) {
	rinv = make([]symBlock, d.nc)
	for c := range st.lam {
		r, ok := blockFn(st.lam[c], func(x float64) float64 { return 1 / math.Sqrt(x) }, true)
		if !ok {
			return nil, nil, errors.New("strategy: multi-epoch dual: multiplier not positive definite")
		}
		rinv[c] = r
	}
	sq := make([]float64, d.n)
	for t := range sq {
		sq[t] = math.Sqrt(st.t[t])
	}
	kb = make([]float64, d.n*(d.bw+1))
	d.kBand(kb, rinv, sq)
	return kb, rinv, nil
}

// spectrum returns bounds [lo, hi] on the eigenvalues of K (band kb) for st.
func (d *meDual) spectrum(kb []float64, st *meState) (lo, hi float64) {
	n, bw, w1 := d.n, d.bw, d.bw+1
	rowAbs := make([]float64, n)
	for p := 0; p < n; p++ {
		for q := max(0, p-bw); q <= p; q++ {
			a := math.Abs(kb[p*w1+q-p+bw])
			rowAbs[p] += a
			if q != p {
				rowAbs[q] += a
			}
		}
	}
	for _, a := range rowAbs {
		hi = math.Max(hi, a)
	}
	trML := 0.0
	for c, blk := range st.lam {
		var es mat.EigenSym
		es.Factorize(mat.NewSymDense(blk.k, append([]float64(nil), blk.a...)), false)
		vals := es.Values(nil)
		top := vals[len(vals)-1]
		for _, t := range d.cls[c] {
			trML += d.mdiag[t] / st.t[t] * top
		}
	}
	return 1 / trML, hi
}

// multiEpochDual solves multi-epoch MF (unequal: the free-diagonal variant)
// through the dual and certifies the result (useMEDual must hold).
func multiEpochDual(ctx context.Context, w *Workload, b int, unequal bool, opts LBFGSOptions) (*Factorization, error) {
	opts.defaults()
	d := newMEDual(w, b)
	if unequal {
		d.unequal, d.tau = true, float64(ceilDiv(d.n, b))
	}
	const iterQuad, boundQuad, formQuad = 1e-11, 1e-14, 1e-9
	o := meDualOptions{maxIter: opts.MaxIter, resTol: meDualResTol, quadTol: iterQuad}
	o.progress = opts.DualProgress
	st, ev, it, err := d.solve(ctx, o)
	if err != nil {
		return nil, err
	}
	x, err := d.formX(ctx, st, formQuad)
	if err != nil {
		return nil, err
	}
	// Certificate: the dense loss of X against the dual bound of the last
	// multiplier (unequal: with its diagonal replaced by class means, the
	// form the unequal dual needs), evaluated with a finer quadrature.
	cand := st
	cost := d.cost(st)
	if unequal {
		cand = &meState{lam: make([]symBlock, d.nc), t: make([]float64, d.n)}
		for t := range cand.t {
			cand.t[t] = 1
		}
		cost = 0
		for c, ts := range d.cls {
			k := len(ts)
			blk := symBlock{k: k, a: make([]float64, k*k)}
			mean := 0.0
			for a := range ts {
				for l := range ts {
					blk.a[a*k+l] = st.lam[c].a[a*k+l] / math.Sqrt(st.t[ts[a]]*st.t[ts[l]])
				}
				mean += blk.a[a*k+a] / float64(k)
			}
			for a := range ts {
				blk.a[a*k+a] = mean
			}
			cand.lam[c] = blk
			cost += d.tau * mean
		}
	}
	lower := math.NaN()
	if cev, err := d.eval(cand, boundQuad); err == nil {
		tr := cev.trW / (1 + cev.q.relErr)
		lower = tr * tr / cost
	}
	p := newMultiEpochProblem(w, b)
	xs := make([]float64, d.n*d.n)
	for i := 0; i < d.n; i++ {
		for j := 0; j <= i; j++ {
			xs[i*d.n+i-j] = x.At(i, j)
		}
	}
	loss := p.denseLossGrad(xs, nil, &denseScratch{})
	if math.IsInf(loss, 1) {
		return nil, errors.New("strategy: multi-epoch dual: X is not positive definite")
	}
	stt := Status{
		Method:     "Lagrange dual fixed point (banded selected inverse, quadrature)",
		Iterations: it, Evals: it, GradNorm: math.NaN(),
		Gap: math.NaN(), Lower: lower, KKT: ev.res, Certified: true,
		Converged: ev.res <= meDualResTol,
	}
	msg := fmt.Sprintf("multiplier residual %.2e after %d iterations (max |P(X(Λ)) − I| on the pattern blocks%s); certificate: ", ev.res, it, map[bool]string{true: ", and the relative change of the diagonal", false: ""}[unequal])
	if math.IsNaN(lower) {
		msg += fmt.Sprintf("no dual bound (the multiplier candidate is not positive definite), tr(AᵀA X⁻¹) = %.10g", loss)
	} else {
		stt.Gap = math.Max(0, (loss-lower)/loss)
		msg += fmt.Sprintf("dual bound %.10g ≤ optimum ≤ tr(AᵀA X⁻¹) = %.10g, relative gap %.2e", lower, loss, stt.Gap)
		if lower > loss {
			msg += fmt.Sprintf(" (the bound exceeds the loss by %.1e relative: rounding)", (lower-loss)/loss)
		}
	}
	stt.Message = msg
	name := "multi-epoch"
	if unequal {
		name = "multi-epoch-f"
	}
	return NewFactorization(name, x, stt)
}

// meDualResTol is the multiplier residual at which the dual iteration stops.
const meDualResTol = 1e-9
