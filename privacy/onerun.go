package privacy

import (
	"errors"
	"math"
	"slices"
)

// One-run auditing (Steinke, Nasr and Jagielski 2023, "Privacy Auditing with
// One (1) Training Run", NeurIPS 2023, arXiv:2305.08846; as jax_privacy's
// CanaryScoreAuditor.epsilon_one_run). m canaries are each inserted or held
// out at random; after one training run an adversary guesses "inserted" for
// the canaries whose score is at least a threshold and abstains on the
// others. If the mechanism is (ε, δ)-DP with respect to each canary, the
// number of correct guesses among r is stochastically dominated, up to a
// δ-term, by Binomial(r, e^ε/(1+e^ε)) (their Theorem 3.1 and its δ > 0
// form): the p-value of v correct guesses is
//
//	β + 2mδ·max_{1≤i≤v} (P[B ≥ v−i] − β)/i,   β = P[B ≥ v], B ~ Bin(r, e^ε/(1+e^ε)),
//
// and the lower bound at significance α is the largest ε whose p-value is at
// most α: with probability at least 1 − α the run is not (ε', δ)-DP for any
// ε' below it. Scores give one guess set per threshold; the thresholds
// considered are the vertices of the (false negatives, true negatives)
// curve's upper convex hull (the others are dominated), and the significance
// is divided among them (Bonferroni), as jax_privacy does.
//
// The theorem draws each canary's inclusion independently with probability
// 1/2; an audit that inserts a uniformly random half (dpfl's) has
// negatively associated inclusions, whose counts concentrate at least as
// tightly as the binomial (Hoeffding 1963, §6), so the binomial p-value is
// the one used.

// OneRunPValue is the p-value of correct correct guesses among guesses,
// with m canaries, for the hypothesis that the mechanism is (eps,
// delta)-DP.
func OneRunPValue(m, guesses, correct int, eps, delta float64) float64 {
	return oneRunPValue(logFactorials(guesses), m, guesses, correct, eps, delta)
}

// logFactorials returns log k! for k = 0..n.
func logFactorials(n int) []float64 {
	lf := make([]float64, n+1)
	for k := 2; k <= n; k++ {
		lf[k] = lf[k-1] + math.Log(float64(k))
	}
	return lf
}

// oneRunPValue is OneRunPValue with log factorials lf up to guesses.
func oneRunPValue(lf []float64, m, guesses, correct int, eps, delta float64) float64 {
	if correct <= 0 {
		return 1
	}
	q := 1 / (1 + math.Exp(-eps))
	pmf := binomialPMF(lf, guesses, q)
	var beta float64
	for k := correct; k <= guesses; k++ {
		beta += pmf[k]
	}
	if delta == 0 {
		return math.Min(beta, 1)
	}
	// (P[B ≥ v−i] − β)/i = (Σ_{k=v−i}^{v−1} pmf(k))/i.
	var alpha, sum float64
	for i := 1; i <= correct; i++ {
		sum += pmf[correct-i]
		alpha = math.Max(alpha, sum/float64(i))
	}
	return math.Min(beta+alpha*delta*2*float64(m), 1)
}

// binomialPMF returns P[Bin(n, q) = k] for k = 0..n (q in [1/2, 1]), from
// the log factorials lf.
func binomialPMF(lf []float64, n int, q float64) []float64 {
	p := make([]float64, n+1)
	if q >= 1 {
		p[n] = 1
		return p
	}
	lq, l1q := math.Log(q), math.Log1p(-q)
	for k := range p {
		p[k] = math.Exp(lf[n] - lf[k] - lf[n-k] + float64(k)*lq + float64(n-k)*l1q)
	}
	return p
}

// EpsilonOneRunCounts is the lower bound from one guess set: the largest
// eps >= lo whose p-value is at most significance (lo when none is).
func EpsilonOneRunCounts(lo float64, m, guesses, correct int, significance, delta float64) float64 {
	return epsilonOneRunCounts(logFactorials(guesses), lo, m, guesses, correct, significance, delta)
}

func epsilonOneRunCounts(lf []float64, lo float64, m, guesses, correct int, significance, delta float64) float64 {
	if oneRunPValue(lf, m, guesses, correct, lo, 0) > significance {
		return lo // even δ = 0 does not reject lo, so no δ > 0 does
	}
	falsified := func(eps float64) bool { return oneRunPValue(lf, m, guesses, correct, eps, delta) <= significance }
	if !falsified(lo) {
		return lo
	}
	hi := math.Max(1, 2*lo)
	for falsified(hi) {
		if hi > 1e4 {
			return hi // separated beyond any finite claim the counts can test
		}
		lo, hi = hi, 2*hi
	}
	for hi-lo > 1e-9*math.Max(1, hi) {
		if mid := (lo + hi) / 2; falsified(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// OneRun is a one-run audit's lower bound on epsilon and the guess set that
// attains it.
type OneRun struct {
	// Epsilon: with probability at least Confidence the mechanism is not
	// (ε', Delta)-DP for any ε' < Epsilon.
	Epsilon    float64 `json:"epsilon_lower_bound"`
	Confidence float64 `json:"confidence"`
	Delta      float64 `json:"delta"`
	Canaries   int     `json:"canaries"`
	// Thresholds the significance is divided among (Bonferroni).
	Thresholds int `json:"thresholds"`
	// The guess set of the bound: canaries scored at least Threshold are
	// guessed inserted (Guesses), Correct of them rightly (no threshold
	// when no guess set gives a bound above 0).
	Threshold *float64 `json:"threshold,omitempty"`
	Guesses   int      `json:"guesses"`
	Correct   int      `json:"correct"`
}

// EpsilonOneRun is the one-run lower bound on epsilon at the given
// confidence from the scores of the inserted (in) and held-out (out)
// canaries, higher scores meaning "inserted".
func EpsilonOneRun(in, out []float64, confidence, delta float64) (OneRun, error) {
	r := OneRun{Confidence: confidence, Delta: delta, Canaries: len(in) + len(out)}
	switch {
	case len(in)+len(out) == 0:
		return r, errors.New("privacy: a one-run audit needs canaries")
	case !(confidence > 0 && confidence < 1):
		return r, errors.New("privacy: a one-run audit needs a confidence in (0, 1)")
	case !(delta >= 0 && delta <= 1):
		return r, errors.New("privacy: a one-run audit needs delta in [0, 1]")
	}
	for _, s := range slices.Concat(in, out) {
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return r, errors.New("privacy: a one-run audit's scores must be finite")
		}
	}
	thr, fn, tn := hullThresholds(in, out)
	r.Thresholds = len(thr)
	sig := (1 - confidence) / float64(len(thr))
	lf := logFactorials(r.Canaries)
	// Most precise guess sets first: a set whose precision is at most
	// e^ε/(1+e^ε) for the best ε so far cannot raise it (at that ε the
	// median of the binomial reaches its correct count, so its p-value is
	// at least 1/2, above any significance below 1/2).
	order := make([]int, len(thr))
	for i := range order {
		order[i] = i
	}
	precision := func(i int) float64 {
		tp, fp := len(in)-fn[i], len(out)-tn[i]
		if tp+fp == 0 {
			return 0
		}
		return float64(tp) / float64(tp+fp)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(precision(b), precision(a)) })
	for _, i := range order {
		t := thr[i]
		tp, fp := len(in)-fn[i], len(out)-tn[i]
		if tp+fp == 0 || (sig < 0.5 && precision(i) <= 1/(1+math.Exp(-r.Epsilon))) {
			continue
		}
		if e := epsilonOneRunCounts(lf, r.Epsilon, r.Canaries, tp+fp, tp, sig, delta); e > r.Epsilon {
			r.Epsilon, r.Guesses, r.Correct = e, tp+fp, tp
			if !math.IsInf(t, 1) {
				r.Threshold = &t
			}
		}
	}
	return r, nil
}

// hullThresholds returns the candidate thresholds (the distinct scores and
// +Inf) at the vertices of the upper convex hull of the points (false
// negatives, true negatives) = (#in below t, #out below t), with those
// counts.
func hullThresholds(in, out []float64) (thr []float64, fn, tn []int) {
	all := slices.Concat(in, out)
	slices.Sort(all)
	all = slices.Compact(all)
	all = append(all, math.Inf(1))
	si, so := slices.Clone(in), slices.Clone(out)
	slices.Sort(si)
	slices.Sort(so)
	below := func(s []float64, t float64) int {
		i, _ := slices.BinarySearch(s, t)
		return i
	}
	// cross < = 0: b lies on or below the chord from a to c.
	cross := func(ax, ay, bx, by, cx, cy int) int { return (by-ay)*(cx-bx) - (cy-by)*(bx-ax) }
	for _, t := range all {
		x, y := below(si, t), below(so, t)
		for n := len(thr); n >= 2 && cross(fn[n-2], tn[n-2], fn[n-1], tn[n-1], x, y) <= 0; n-- {
			thr, fn, tn = thr[:n-1], fn[:n-1], tn[:n-1]
		}
		thr, fn, tn = append(thr, t), append(fn, x), append(tn, y)
	}
	return thr, fn, tn
}
