package privacy

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// Balls-in-bins sampling for matrix mechanisms, accounted by Monte Carlo.
//
// The schedule: every record is assigned, independently and uniformly at
// random, to one of b bins, and takes part in every round t with t mod b
// equal to its bin (Choquette-Choo, Ganesh, Haque, Steinke and Thakurta
// 2024, "Near Exact Privacy Amplification for Matrix Mechanisms",
// arXiv:2410.06266, as jax_privacy's BallsInBinsSampling; for one band,
// Chua, Ghazi, Harrison, Kamath, Kumar, Manurangsi, Sinha and Zhang 2024,
// "Balls-and-Bins Sampling for DP-SGD", arXiv:2412.16802). The mechanism
// releases y = C·x + z over n rounds, z ~ N(0, σ²) per round and
// coordinate, with C lower triangular, entrywise non-negative and banded
// with at most b bands. For such C the pair dominating the mechanism under
// zero-out adjacency (one record's updates replaced by zeros; the
// assignment of the other records is unchanged) is, in one dimension,
//
//	P = (1/b) Σ_s N(m_s, σ² I),   Q = N(0, σ² I),   m_s = C·1[t ≡ s mod b],
//
// with privacy loss L(y) = log (1/b) Σ_s exp((⟨y, m_s⟩ − ‖m_s‖²/2)/σ²).
// The loss depends on y only through u_s = ⟨y, m_s⟩, which is Gaussian
// with covariance σ²·G (G the Gram matrix ⟨m_s, m_s'⟩) and mean G[·, s]
// under P's component s, 0 under Q; the sampler draws u directly, b numbers
// per sample whatever n is.
//
// δ(ε) = E_P[(1 − e^{ε−L})₊] (and its mirror E_Q[(1 − e^{ε+L})₊] for the
// other direction) is estimated from N independent samples of each. Each
// term lies in [0, 1], so by Hoeffding's (1963) relative-entropy bound
// P(mean ≤ μ − t) ≤ exp(−N·kl(μ − t, μ)): the upper confidence bound
// δ⁺(ε) = max{p : N·kl(δ̂, p) ≤ log(2/α)} exceeds the true δ(ε) with
// probability at least 1 − α/2 for each direction. δ⁺ decreases with ε, so
// the reported ε, the smallest one whose δ⁺ of both directions is at most
// the target, is at least the true ε (at that δ) with probability at least
// 1 − α, the stated confidence. It is labelled with the method and the
// confidence, for it is not a deterministic bound.
//
// Why Monte Carlo and not the provable MMCC bound of Choquette-Choo,
// Ganesh, Steinke and Thakurta (2024, "Privacy Amplification for Matrix
// Mechanisms", ICLR 2024): the Monte Carlo account is the one those
// authors' later work and jax_privacy give for balls-in-bins with banded
// matrix mechanisms, its pair is exact for the schedule (MMCC's
// conditional composition is a looser upper bound, which is what the
// later work set out to tighten), and the only price, a probability of
// failure, is stated on every epsilon it prints.
//
// The bin is drawn once per record for the whole run (the schedule of
// jax_privacy's BallsInBinsSampling and of the dominating pair above); a
// schedule that re-draws the bins every epoch is a different mechanism,
// whose pair for more than one band is not this one.

// MethodMonteCarlo labels an epsilon estimated by Monte Carlo with a
// one-sided confidence bound (see BallsInBinsEpsilon).
const MethodMonteCarlo = "monte-carlo"

// MonteCarloMethod is the method label of a Monte Carlo guarantee at
// confidence conf, e.g. "monte-carlo, 99% confidence".
func MonteCarloMethod(conf float64) string {
	return fmt.Sprintf("%s, %s%% confidence", MethodMonteCarlo, strconv.FormatFloat(100*conf, 'g', 6, 64))
}

// BallsInBins is a banded matrix mechanism on a balls-in-bins schedule.
type BallsInBins struct {
	// Bins b: a record takes part in every round t ≡ its bin (mod b).
	Bins int
	// Rounds n of the mechanism (rows of C).
	Rounds int
	// NoiseMultiplier σ: the noise standard deviation of each round in
	// units of the clip norm (not normalized by C's column norms).
	NoiseMultiplier float64
	// Entry returns C[i][j] (0 ≤ j ≤ i < Rounds); Bands is C's band count
	// (C[i][j] = 0 for i − j ≥ Bands), at most Bins.
	Entry func(i, j int) float64
	Bands int
}

// MonteCarlo is how a Monte Carlo accountant samples: Samples draws from
// each side of the pair, and the bound holds with probability Confidence.
type MonteCarlo struct {
	Samples    int
	Confidence float64
}

// Modes returns m_s = C·1[t ≡ s mod b] for s = 0..b−1, after checking that
// the mechanism is one the dominating pair covers.
func (m BallsInBins) Modes() ([][]float64, error) {
	switch {
	case m.Bins < 1 || m.Rounds < 1:
		return nil, fmt.Errorf("privacy: balls-in-bins needs bins >= 1 and rounds >= 1 (have %d, %d)", m.Bins, m.Rounds)
	case m.Rounds < m.Bins:
		return nil, fmt.Errorf("privacy: balls-in-bins with %d bins over %d rounds leaves bins without a round (want rounds >= bins)", m.Bins, m.Rounds)
	case m.Bands < 1 || m.Bands > m.Bins:
		return nil, fmt.Errorf("privacy: balls-in-bins needs a C with 1 to b = %d bands (have %d): the dominating pair is proved for at most b bands", m.Bins, m.Bands)
	case !(m.NoiseMultiplier > 0) || math.IsInf(m.NoiseMultiplier, 1):
		return nil, fmt.Errorf("privacy: balls-in-bins noise multiplier must be positive and finite, got %g", m.NoiseMultiplier)
	case m.Entry == nil:
		return nil, errors.New("privacy: balls-in-bins needs the entries of C")
	}
	modes := make([][]float64, m.Bins)
	for s := range modes {
		modes[s] = make([]float64, m.Rounds)
	}
	for i := 0; i < m.Rounds; i++ {
		for j := max(0, i-m.Bands+1); j <= i; j++ {
			c := m.Entry(i, j)
			if !(c >= 0) || math.IsInf(c, 1) {
				return nil, fmt.Errorf("privacy: balls-in-bins needs C entrywise non-negative and finite (C[%d][%d] = %g)", i, j, c)
			}
			modes[j%m.Bins][i] += c
		}
	}
	for s, v := range modes {
		if v[s] == 0 {
			return nil, fmt.Errorf("privacy: balls-in-bins needs a positive diagonal of C (C[%d][%d] = 0)", s, s)
		}
	}
	return modes, nil
}

// BallsInBinsLoss is the privacy loss log (1/b) Σ_s exp((⟨y, m_s⟩ −
// ‖m_s‖²/2)/σ²) of an output y of the dominating pair with the given modes.
func BallsInBinsLoss(y []float64, modes [][]float64, sigma float64) float64 {
	ls := make([]float64, len(modes))
	for s, m := range modes {
		var dot, sq float64
		for i, v := range m {
			dot += y[i] * v
			sq += v * v
		}
		ls[s] = (dot - sq/2) / (sigma * sigma)
	}
	return logMeanExp(ls)
}

// logMeanExp is log((1/n) Σ exp(x_i)).
func logMeanExp(x []float64) float64 {
	hi := slices.Max(x)
	if math.IsInf(hi, 0) {
		return hi
	}
	var s float64
	for _, v := range x {
		s += math.Exp(v - hi)
	}
	return hi + math.Log(s/float64(len(x)))
}

// gram returns G[s][s'] = ⟨m_s, m_s'⟩ and its lower Cholesky factor.
func gram(modes [][]float64) (g, l [][]float64, err error) {
	b := len(modes)
	g, l = make([][]float64, b), make([][]float64, b)
	for s := range g {
		g[s], l[s] = make([]float64, b), make([]float64, b)
		for r := 0; r <= s; r++ {
			var d float64
			for i, v := range modes[s] {
				d += v * modes[r][i]
			}
			g[s][r], g[r][s] = d, d
		}
	}
	for i := 0; i < b; i++ {
		for j := 0; j <= i; j++ {
			sum := g[i][j]
			for k := 0; k < j; k++ {
				sum -= l[i][k] * l[j][k]
			}
			if i == j {
				if !(sum > 0) {
					return nil, nil, errors.New("privacy: balls-in-bins modes are linearly dependent (the Gram matrix is singular)")
				}
				l[i][i] = math.Sqrt(sum)
			} else {
				l[i][j] = sum / l[j][j]
			}
		}
	}
	return g, l, nil
}

// BallsInBinsLosses draws mc.Samples privacy losses from each side of the
// dominating pair: pos under P (loss L), neg under Q (the loss of Q against
// P, −L), each sorted in decreasing order.
func BallsInBinsLosses(m BallsInBins, samples int, r *rand.Rand) (pos, neg []float64, err error) {
	modes, err := m.Modes()
	if err != nil {
		return nil, nil, err
	}
	g, l, err := gram(modes)
	if err != nil {
		return nil, nil, err
	}
	b, sigma := m.Bins, m.NoiseMultiplier
	xi, u, ls := make([]float64, b), make([]float64, b), make([]float64, b)
	loss := func(mean int) float64 {
		for i := range xi {
			xi[i] = r.NormFloat64()
		}
		for i := range u {
			v := 0.0
			if mean >= 0 {
				v = g[i][mean]
			}
			for k := 0; k <= i; k++ {
				v += sigma * l[i][k] * xi[k]
			}
			u[i] = v
			ls[i] = (v - g[i][i]/2) / (sigma * sigma)
		}
		return logMeanExp(ls)
	}
	pos, neg = make([]float64, samples), make([]float64, samples)
	for i := range pos {
		pos[i] = loss(r.IntN(b))
		neg[i] = -loss(-1)
	}
	slices.SortFunc(pos, func(a, b float64) int { return -cmpFloat(a, b) })
	slices.SortFunc(neg, func(a, b float64) int { return -cmpFloat(a, b) })
	return pos, neg, nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// hockeyMean is (1/N) Σ (1 − e^{ε − L_i})₊ over losses sorted decreasingly.
func hockeyMean(losses []float64, eps float64) float64 {
	var s float64
	for _, l := range losses {
		if l <= eps {
			break
		}
		s += -math.Expm1(eps - l)
	}
	return s / float64(len(losses))
}

// klUpper is the largest p in [mean, 1] with n·kl(mean, p) ≤ logInv
// (Hoeffding's bound for a mean of n values in [0, 1]: the true mean exceeds
// it with probability at most e^{−logInv}).
func klUpper(mean float64, n int, logInv float64) float64 {
	lo, hi := mean, 1.0
	for range 200 {
		mid := (lo + hi) / 2
		if float64(n)*bernoulliKL(mean, mid) > logInv {
			hi = mid
		} else {
			lo = mid
		}
		if hi-lo <= 1e-15*hi {
			break
		}
	}
	return hi
}

// bernoulliKL is kl(a, b) = a log(a/b) + (1−a) log((1−a)/(1−b)).
func bernoulliKL(a, b float64) float64 {
	if b >= 1 {
		return math.Inf(1)
	}
	var k float64
	if a > 0 {
		k += a * math.Log(a/b)
	}
	if a < 1 {
		k += (1 - a) * math.Log((1-a)/(1-b))
	}
	return k
}

// BallsInBinsDelta is the upper confidence bound on δ(ε) from sorted loss
// samples of both sides (BallsInBinsLosses), at confidence conf.
func BallsInBinsDelta(pos, neg []float64, eps, conf float64) float64 {
	logInv := math.Log(2 / (1 - conf))
	return max(klUpper(hockeyMean(pos, eps), len(pos), logInv), klUpper(hockeyMean(neg, eps), len(neg), logInv))
}

// BallsInBinsEpsilon is the Monte Carlo guarantee of the mechanism at delta:
// the smallest epsilon whose upper confidence bound on delta (at
// mc.Confidence, both directions) is at most delta, under zero-out
// adjacency. It fails when mc.Samples are too few to certify any epsilon at
// that delta (the bound cannot go below about log(2/α)/Samples).
func BallsInBinsEpsilon(m BallsInBins, delta float64, mc MonteCarlo, r *rand.Rand) (Guarantee, error) {
	if err := mc.check(delta); err != nil {
		return Guarantee{}, err
	}
	pos, neg, err := BallsInBinsLosses(m, mc.Samples, r)
	if err != nil {
		return Guarantee{}, err
	}
	return epsilonFromLosses(pos, neg, delta, mc.Confidence)
}

func (mc MonteCarlo) check(delta float64) error {
	switch {
	case !(delta > 0 && delta < 1):
		return fmt.Errorf("privacy: delta must be in (0, 1), got %g", delta)
	case !(mc.Confidence > 0 && mc.Confidence < 1):
		return fmt.Errorf("privacy: Monte Carlo confidence must be in (0, 1), got %g", mc.Confidence)
	case mc.Samples < 1:
		return fmt.Errorf("privacy: Monte Carlo needs at least one sample, got %d", mc.Samples)
	}
	if need := math.Log(2/(1-mc.Confidence)) / delta; float64(mc.Samples) < need {
		return fmt.Errorf("privacy: %d Monte Carlo samples cannot certify δ = %g at confidence %g (need more than log(2/(1-confidence))/δ = %.3g)", mc.Samples, delta, mc.Confidence, need)
	}
	return nil
}

// epsilonFromLosses bisects for the smallest epsilon >= 0 whose bound is at
// most delta.
func epsilonFromLosses(pos, neg []float64, delta, conf float64) (Guarantee, error) {
	g := Guarantee{Delta: delta, Method: MonteCarloMethod(conf), Adjacency: ZeroOut}
	if BallsInBinsDelta(pos, neg, 0, conf) <= delta {
		return g, nil
	}
	hi := max(pos[0], neg[0], 1)
	if BallsInBinsDelta(pos, neg, hi, conf) > delta {
		return g, fmt.Errorf("privacy: %d Monte Carlo samples cannot certify δ = %g at confidence %g (use more samples)", len(pos), delta, conf)
	}
	lo := 0.0
	for hi-lo > 1e-9*max(1, hi) {
		mid := (lo + hi) / 2
		if BallsInBinsDelta(pos, neg, mid, conf) <= delta {
			hi = mid
		} else {
			lo = mid
		}
	}
	g.Epsilon = hi
	return g, nil
}
