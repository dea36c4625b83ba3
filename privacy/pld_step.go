package privacy

import (
	"math"
)

// This file discretizes the privacy loss of one step (one direction of one
// mechanism) onto the loss grid {kΔ}. See the package documentation, section
// "PLD discretization", for why the two constructions bound the exact
// hockey-stick curve from above and below.

// lossPair is the privacy-loss distribution of one pair (P, Q) of output
// distributions, L = log(dP/dQ)(x) for x ~ P, described through the masses of
// its level sets.
type lossPair interface {
	// split returns P(L <= l), Q(L <= l), P(L > l) and Q(L > l), each computed
	// directly (not as 1 minus the other) so that small tails keep their
	// relative precision.
	split(l float64) (pc, qc, ps, qs float64)
	// bounds returns a loss range [lo, hi] outside which P has at most
	// pldStepTail mass on each side (the exact support when it is bounded).
	bounds() (lo, hi float64)
}

// pldStepTail is the P-mass each step may leave outside its grid on each side
// (about 2e-21: 9.5 standard deviations of a normal).
const pldTailSD = 9.5

// gaussLoss is the Poisson-sampled Gaussian with noise multiplier sigma and
// sampling probability q (q = 1: no sampling), in the remove direction
// (P = (1-q)N(0,σ²) + qN(1,σ²), Q = N(0,σ²); loss increasing in x) or the add
// direction (P = N(0,σ²), Q the mixture; loss decreasing in x). For q = 1 both
// directions are P = N(1,σ²) against Q = N(0,σ²).
type gaussLoss struct {
	q, sigma float64
	add      bool
}

// removeLoss is log(1-q + q e^{(2x-1)/(2σ²)}).
func (g gaussLoss) removeLoss(x float64) float64 {
	z := (2*x - 1) / (2 * g.sigma * g.sigma)
	if g.q == 1 {
		return z
	}
	return logAdd(math.Log1p(-g.q), math.Log(g.q)+z)
}

// removeX is the x at which removeLoss equals l (-Inf at or below the
// smallest loss log(1-q)).
func (g gaussLoss) removeX(l float64) float64 {
	s2 := g.sigma * g.sigma
	if g.q == 1 {
		return s2*l + 0.5
	}
	if math.IsInf(l, 1) {
		return math.Inf(1)
	}
	var z float64 // log((e^l - (1-q))/q)
	if l > 1 {
		z = l - math.Log(g.q) + math.Log1p(-(1-g.q)*math.Exp(-l))
	} else {
		v := math.Expm1(l) + g.q
		if v <= 0 {
			return math.Inf(-1)
		}
		z = math.Log(v / g.q)
	}
	return s2*z + 0.5
}

// normTails returns Phi(z) and 1 - Phi(z), the smaller computed directly
// (one erfc) and the larger as 1 minus it, which loses nothing.
func normTails(z float64) (c, s float64) {
	if z < 0 {
		c = phi(z)
		return c, 1 - c
	}
	s = phi(-z)
	return 1 - s, s
}

func (g gaussLoss) split(l float64) (pc, qc, ps, qs float64) {
	add := g.add && g.q < 1
	if add {
		// L = -removeLoss(x) <= l  <=>  removeLoss(x) >= -l  <=>  x >= removeX(-l).
		l = -l
	}
	x := g.removeX(l)
	c0, s0 := normTails(x / g.sigma)       // N(0, σ²) below and above x
	c1, s1 := normTails((x - 1) / g.sigma) // N(1, σ²)
	switch {
	case g.q == 1:
		return c1, c0, s1, s0
	case !add:
		return (1-g.q)*c0 + g.q*c1, c0, (1-g.q)*s0 + g.q*s1, s0
	}
	return s0, (1-g.q)*s0 + g.q*s1, c0, (1-g.q)*c0 + g.q*c1
}

func (g gaussLoss) bounds() (lo, hi float64) {
	k, s := pldTailSD, g.sigma
	switch {
	case g.q == 1:
		return g.removeLoss(1 - k*s), g.removeLoss(1 + k*s)
	case !g.add:
		return math.Log1p(-g.q), g.removeLoss(1 + k*s)
	default:
		return -g.removeLoss(k * s), -math.Log1p(-g.q)
	}
}

// rrLoss is randomized response with parameter eps, the pair that dominates
// every eps-DP mechanism (Kairouz, Oh and Viswanath 2015): P = (a, b),
// Q = (b, a) with a = e^eps/(1+e^eps), b = 1-a; losses +eps and -eps. With
// Poisson sampling (q < 1) the remove direction is ((1-q)Q + qP, Q) and the
// add direction (Q, (1-q)Q + qP).
type rrLoss struct {
	q, eps float64
	add    bool
}

// atoms returns the two outcomes' losses and their P and Q masses.
func (r rrLoss) atoms() (l, p, q [2]float64) {
	a := 1 / (1 + math.Exp(-r.eps)) // e^eps/(1+e^eps)
	b := 1 / (1 + math.Exp(r.eps))
	// Outcome 0 is the one P favours.
	pr := [2]float64{(1-r.q)*b + r.q*a, (1-r.q)*a + r.q*b} // (1-q)Q + qP
	qr := [2]float64{b, a}
	if !r.add {
		p, q = pr, qr
	} else {
		p, q = qr, pr
	}
	for i := range l {
		l[i] = math.Log(p[i]) - math.Log(q[i])
		if p[i] == 0 || q[i] == 0 {
			// A mass underflowed (eps beyond ~745): the loss from the
			// masses' logs, log a = −log(1+e^−eps), log b = log a − eps.
			la := -math.Log1p(math.Exp(-r.eps))
			lb := la - r.eps
			lp := [2]float64{logAdd(math.Log1p(-r.q)+lb, math.Log(r.q)+la), logAdd(math.Log1p(-r.q)+la, math.Log(r.q)+lb)}
			lq := [2]float64{lb, la}
			if r.add {
				lp, lq = lq, lp
			}
			l[i] = lp[i] - lq[i]
		}
	}
	return l, p, q
}

func (r rrLoss) split(x float64) (pc, qc, ps, qs float64) {
	l, p, q := r.atoms()
	for i := range l {
		if l[i] <= x {
			pc += p[i]
			qc += q[i]
		} else {
			ps += p[i]
			qs += q[i]
		}
	}
	return
}

func (r rrLoss) bounds() (lo, hi float64) {
	l, _, _ := r.atoms()
	return math.Min(l[0], l[1]), math.Max(l[0], l[1])
}

// pldPMF is a discretized privacy-loss distribution: mass p[i] at loss
// (lo+i)·Δ, and pInf at +Inf.
type pldPMF struct {
	lo   int
	p    []float64
	pInf float64
}

// binMasses returns, for the boundaries b_0 < b_1 < ... < b_m, the P and Q
// masses of the bins (b_i, b_{i+1}] and of the two tails (-Inf, b_0] and
// (b_m, Inf). Each bin mass is a difference of CDFs or of survival functions,
// whichever are the smaller (more precise) numbers.
func binMasses(lp lossPair, b []float64) (pBin, qBin []float64, pLow, qLow, pHigh, qHigh float64) {
	n := len(b)
	pc, qc, ps, qs := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i, x := range b {
		pc[i], qc[i], ps[i], qs[i] = lp.split(x)
	}
	diff := func(c, s []float64, i int) float64 {
		var d float64
		if s[i] < 0.5 {
			d = s[i] - s[i+1]
		} else {
			d = c[i+1] - c[i]
		}
		return math.Max(0, d)
	}
	pBin, qBin = make([]float64, n-1), make([]float64, n-1)
	for i := 0; i+1 < n; i++ {
		pBin[i] = diff(pc, ps, i)
		qBin[i] = diff(qc, qs, i)
	}
	return pBin, qBin, pc[0], qc[0], ps[n-1], qs[n-1]
}

// gridRange returns the grid indices kmin <= kmax covering the pair's loss
// range.
func gridRange(lp lossPair, step float64) (kmin, kmax int) {
	lo, hi := lp.bounds()
	kmin = int(math.Floor(lo / step))
	kmax = int(math.Ceil(hi / step))
	if kmax <= kmin {
		kmax = kmin + 1
	}
	return kmin, kmax
}

// pessimisticPMF is the connect-the-dots discretization (Doroshenko, Ghazi,
// Kamath, Kumar and Manurangsi 2022): its hockey-stick curve equals the
// pair's at every grid loss and is linear in e^ε in between, so it lies
// above the (convex in e^ε) exact curve everywhere. Equivalently, the
// P-mass with loss l in a grid interval (ε_j, ε_{j+1}] is split between the
// two ends so that both the P-mass and the Q-mass (the mean of e^{-l}) are
// preserved: to ε_j goes (e^{ε_{j+1}} Q(bin) - P(bin))/(e^Δ - 1), the rest to
// ε_{j+1}. Mass below the grid goes to its lowest point; above the grid,
// e^{ε_max} Q(L > ε_max) goes to ε_max and δ(ε_max) to +Inf.
func pessimisticPMF(lp lossPair, step float64) pldPMF {
	kmin, kmax := gridRange(lp, step)
	n := kmax - kmin + 1
	b := make([]float64, n)
	for i := range b {
		b[i] = float64(kmin+i) * step
	}
	pBin, qBin, pLow, _, pHigh, qHigh := binMasses(lp, b)
	d := pldPMF{lo: kmin, p: make([]float64, n)}
	d.p[0] += pLow
	em1 := math.Expm1(step)
	for i := range pBin {
		if pBin[i] == 0 {
			continue
		}
		var down float64
		if e := math.Exp(b[i+1]); !math.IsInf(e, 1) && !math.IsInf(em1, 1) {
			down = (e*qBin[i] - pBin[i]) / em1
		} else {
			// Beyond float64's e^709: e^{b_{i+1}}/(e^Δ − 1) = e^{b_i}/(1 − e^{−Δ}).
			down = expTimes(b[i]-math.Log(-math.Expm1(-step)), qBin[i]) - pBin[i]/em1
		}
		down = math.Min(math.Max(down, 0), pBin[i])
		d.p[i] += down
		d.p[i+1] += pBin[i] - down
	}
	top := math.Min(expTimes(b[n-1], qHigh), pHigh)
	d.p[n-1] += top
	d.pInf = pHigh - top
	return d
}

// optimisticPMF is a discretization whose hockey-stick curve lies below the
// pair's. The loss axis is cut into bins centred on the grid points, and the
// bins are merged into groups placed on grid points by a merger (see there).
// The tails beyond the grid (at most pldTailSD standard deviations of
// P-mass) are dropped, which also lowers the curve.
func optimisticPMF(lp lossPair, step float64) pldPMF {
	kmin, kmax := gridRange(lp, step)
	n := kmax - kmin + 1
	b := make([]float64, n+1)
	for i := range b {
		b[i] = (float64(kmin+i) - 0.5) * step
	}
	pBin, qBin, _, _, _, _ := binMasses(lp, b)
	// One extra grid point below kmin: a last group rounded down may land
	// there. Indices above kmax are rounded down to kmax.
	m := newMerger(step, kmin-1, kmax)
	for i := range pBin {
		if qBin[i] == 0 && pBin[i] > 0 {
			// Q's mass underflowed (a loss in the hundreds): the bin's
			// loss is unknown but at least its lower boundary; the grid
			// point below that is a lower loss.
			k := kmin + i - 1
			m.emit(k, pBin[i], b[i], b[i])
			continue
		}
		m.add(pBin[i], qBin[i])
	}
	return pldPMF{lo: kmin - 1, p: m.finish()}
}

// merger builds an optimistic grid distribution from outcomes given in
// increasing order of loss, each as its P-mass and Q-mass: outcomes are
// merged, splitting one between two groups where needed, into consecutive
// groups whose merged loss log(P(group)/Q(group)) is exactly a grid point,
// where the group's P-mass is placed. Merging outcomes is post-processing,
// which can only lower the hockey-stick curve. A group that cannot reach its
// grid point (the last one) is rounded down to the grid: a lower loss, again
// a lower curve. Indices outside [kmin, kmax] are clipped; callers leave
// room below the lowest loss, and clipping above rounds down. maxDisp is the
// largest distance between an outcome's loss and the grid point its mass
// went to.
type merger struct {
	step       float64
	kmin, kmax int
	out        []float64
	accP, accQ float64
	gMin, gMax float64 // loss range of the open group's outcomes
	target     int
	maxDisp    float64
}

func newMerger(step float64, kmin, kmax int) *merger {
	return &merger{step: step, kmin: kmin, kmax: kmax, out: make([]float64, kmax-kmin+1)}
}

func (m *merger) emit(k int, mass, lmin, lmax float64) {
	k = min(max(k, m.kmin), m.kmax)
	m.out[k-m.kmin] += mass
	at := float64(k) * m.step
	m.maxDisp = math.Max(m.maxDisp, math.Max(math.Abs(lmin-at), math.Abs(lmax-at)))
}

// add adds an outcome with P-mass p and Q-mass q; its loss must not be
// below the previous outcomes' losses.
func (m *merger) add(p, q float64) {
	if p <= 0 {
		return
	}
	if q == 0 {
		// Infinite loss: only possible at the top; rounded down to the grid.
		m.emit(m.kmax, p, float64(m.kmax)*m.step, float64(m.kmax)*m.step)
		return
	}
	l := math.Log(p) - math.Log(q)
	for p > 0 {
		if m.accP == 0 {
			// Start a group; its target is the first grid point at or
			// above this outcome's loss (a loss a hair above a grid point,
			// from rounding, goes down to it: never up).
			m.target = int(math.Ceil(l/m.step - 1e-9))
			if l >= float64(m.target)*m.step {
				m.emit(m.target, p, l, l)
				return
			}
			m.accP, m.accQ, m.gMin, m.gMax = p, q, l, l
			return
		}
		le := float64(m.target) * m.step
		need := expTimes(le, m.accQ) - m.accP // > 0: the group is below its target
		give := p - expTimes(le, q)           // > 0 when this outcome lies above the target
		m.gMax = l
		if give > 0 && give >= need {
			lam := need / give
			m.emit(m.target, m.accP+lam*p, m.gMin, m.gMax)
			p, q = (1-lam)*p, (1-lam)*q
			m.accP, m.accQ = 0, 0
			continue
		}
		m.accP += p
		m.accQ += q
		return
	}
}

// finish rounds an open group down and returns the grid masses.
func (m *merger) finish() []float64 {
	if m.accP > 0 {
		l := math.Log(m.accP) - math.Log(m.accQ)
		m.emit(int(math.Floor(l/m.step)), m.accP, m.gMin, m.gMax)
		m.accP, m.accQ = 0, 0
	}
	return m.out
}
