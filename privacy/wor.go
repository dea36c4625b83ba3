package privacy

import "math"

// This file is the RDP of the Gaussian mechanism on a fixed-size sample
// drawn without replacement, under replace-one adjacency: the bound of
// Wang, Balle and Kasiviswanathan (2019, arXiv:1808.00087, Theorem 27: their
// general bound strengthened for the Gaussian mechanism; the bound TF-Privacy's
// compute_rdp_sample_without_replacement and dp_accounting's RDP accountant
// compute for SampledWithoutReplacementDpEvent).
//
// With sampling ratio γ = m/n, base RDP ε(α) = α/(2σ²) (σ relative to the
// replace-one sensitivity) and integer α ≥ 2, the subsampled mechanism's RDP
// at α is at most log(A)/(α−1) with
//
//	A = 1 + γ² C(α,2) min{4(e^{ε(2)} − 1), 2e^{ε(2)}}
//	      + Σ_{j=3..α} γ^j C(α,j) min{4 √(D_{2⌊j/2⌋} D_{2⌈j/2⌉}), 2e^{(j−1)ε(j)}},
//
// where D_l is the l-th forward difference at 0 of the sequence
// e^{(i−1)ε(i)} = e^{i(i−1)/(2σ²)}. That sequence is the moment sequence
// E[Y^i] of the log-normal Y = e^Z, Z ~ N(−c, 2c), c = 1/(2σ²), so
// D_l = E[(Y − 1)^l]; for even l it is computed here by numerical
// integration in log space, which keeps its relative precision where the
// alternating binomial sum cancels catastrophically. Above order
// worMaxDiffOrder only the second minimand is used (as the reference
// implementations do), and above worMaxOrder the unsampled Gaussian's RDP,
// which upper-bounds the subsampled one. Fractional orders interpolate the
// cumulant (α−1)·RDP linearly between the neighbouring integers (its
// convexity, the paper's Corollary 10), with (α−1)·RDP = 0 at α = 1.

// worMaxDiffOrder is the largest order whose bound uses the forward
// differences.
const worMaxDiffOrder = 256

// worMaxOrder is the largest order summed term by term.
const worMaxOrder = 1 << 20

// worMaxGrid caps the integration grid of the moments; beyond it (noise
// multipliers far below any useful one) the moments are not used, which
// only loosens the bound.
const worMaxGrid = 1 << 16

// worRDP adds to dst the RDP at each order of one Gaussian with noise
// multiplier sigma on a sample of ratio q (0 < q < 1) drawn without
// replacement.
func worRDP(dst []float64, q, sigma float64, orders []float64) {
	maxInt := 0
	for _, al := range orders {
		if c := math.Ceil(al); c <= worMaxDiffOrder {
			maxInt = max(maxInt, int(c))
		}
	}
	logD := worEvenMoments(sigma, (maxInt+1)/2)
	memo := map[int]float64{}
	logA := func(n int) float64 {
		if v, ok := memo[n]; ok {
			return v
		}
		v := worLogA(q, sigma, n, logD)
		memo[n] = v
		return v
	}
	for i, al := range orders {
		if al > worMaxOrder || math.IsInf(al, 1) {
			dst[i] += al / (2 * sigma * sigma)
			continue
		}
		lo, hi := math.Floor(al), math.Ceil(al)
		var cgf float64
		if lo == hi {
			cgf = logA(int(al))
		} else {
			t := al - lo
			var clo float64
			if lo >= 2 {
				clo = logA(int(lo))
			}
			cgf = (1-t)*clo + t*logA(int(hi))
		}
		dst[i] += math.Min(cgf/(al-1), al/(2*sigma*sigma))
	}
}

// worLogA is log A of the bound above at integer order n ≥ 2; logD[k] is
// log D_{2k} for k < len(logD) (D is used only when n ≤ worMaxDiffOrder
// and the moments it needs are there).
func worLogA(q, sigma float64, n int, logD []float64) float64 {
	s2 := 2 * sigma * sigma
	lq := math.Log(q)
	e2 := 2 / s2
	lnf := float64(n)
	rest := 2*lq + logBinom(lnf, 2) + math.Min(math.Log(4)+logExpm1(e2), e2+math.Ln2)
	useD := n <= worMaxDiffOrder && len(logD) > (n+1)/2
	for j := 3; j <= n; j++ {
		fj := float64(j)
		b := math.Ln2 + (fj-1)*fj/s2
		if useD {
			b = math.Min(b, math.Log(4)+0.5*(logD[j/2]+logD[(j+1)/2]))
		}
		rest = logAdd(rest, fj*lq+logBinom(lnf, fj)+b)
	}
	if rest > 30 {
		return rest + math.Log1p(math.Exp(-rest))
	}
	return math.Log1p(math.Exp(rest))
}

// logExpm1 is log(e^x − 1) for x > 0.
func logExpm1(x float64) float64 {
	if x > 1 {
		return x + math.Log1p(-math.Exp(-x))
	}
	return math.Log(math.Expm1(x))
}

// worEvenMoments returns log E[(Y−1)^{2k}] for k = 0..K (index k), Y = e^Z,
// Z ~ N(−c, 2c), c = 1/(2σ²), by the trapezoid rule in log space on a grid
// of step √(2c)/16 reaching 40 standard deviations below the mean and 40
// beyond the largest moment's peak (near 4cK); nil when that grid would
// exceed worMaxGrid points. The integrands are smooth and at least √(2c)
// wide, so the trapezoid rule is accurate far beyond float64's resolution
// at that step.
func worEvenMoments(sigma float64, K int) []float64 {
	if K < 1 {
		return nil
	}
	c := 1 / (2 * sigma * sigma)
	s := math.Sqrt(2 * c)
	lo := -c - 40*s
	hi := 4*c*float64(K) + 40*s + 1
	h := s / 16
	n := int(math.Ceil((hi-lo)/h)) + 1
	if !(n > 0 && n <= worMaxGrid) {
		return nil
	}
	lx := make([]float64, n) // log|e^z − 1|
	lp := make([]float64, n) // log density of Z, plus log h
	lh := math.Log(h) - math.Log(s*math.Sqrt(2*math.Pi))
	for i := range lx {
		z := lo + float64(i)*h
		if z > 0 {
			lx[i] = logExpm1(z)
		} else {
			lx[i] = math.Log(-math.Expm1(z))
		}
		d := (z + c) / s
		lp[i] = lh - d*d/2
	}
	out := make([]float64, K+1)
	for k := 1; k <= K; k++ {
		p := 2 * float64(k)
		m := math.Inf(-1)
		for i := range lx {
			m = math.Max(m, p*lx[i]+lp[i])
		}
		sum := 0.0
		for i := range lx {
			sum += math.Exp(p*lx[i] + lp[i] - m)
		}
		out[k] = m + math.Log(sum)
	}
	return out
}
