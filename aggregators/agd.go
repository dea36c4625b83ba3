package aggregators

import (
	"fmt"
	"iter"
	"math"
	"slices"

	"dpfl/privacy"
	"dpfl/sim/rng"
)

// AGD is the server side of DP-AGD (Lee and Kifer 2018, "Concentrated
// Differentially Private Gradient Descent with Adaptive per-Iteration
// Privacy Budget", KDD 2018) in federated rounds: the "gradient"
// is the cohort's clipped, summed model update, and the step size is
// chosen by a noisy max over the cohort's clipped losses. Every release is
// paid from a zCDP Ledger (Lee and Kifer 2018 Lemma 3.5: expenses add), and the run stops
// when the next release does not fit: the number of rounds is an outcome.
//
// One round t, with ρ_ng the current gradient budget:
//
//	g  = Σ_i clip_C(Δ_i)                          (sensitivity C, zero-out)
//	g̃  = g + N(0, C²/(2ρ_ng) I)                   ρ_ng-zCDP        "gradient"
//	repeat:
//	  u = g̃/‖g̃‖; Ω_j = Σ_i min(L_i(w − α_j u), C_obj) for α_j ∈ Φ (α_0 = 0)
//	  j = argmax_j (−Ω_j + Lap(C_obj/ε)), ε = √(2ρ_nmax)   ρ_nmax-zCDP  "noisy-max"
//	  if j > 0: w ← w − α_j u; done
//	  else: ρ' = (1+γ)ρ_ng; g̃₂ = g + N(0, C²/(2(ρ'−ρ_ng)) I);
//	        g̃ = (ρ_ng g̃ + (ρ'−ρ_ng) g̃₂)/ρ'; ρ_ng = ρ'      (ρ'−ρ_ng)-zCDP  "gradient-avg"
//
// The losses are monotone in a client (zero-out replaces L_i by 0 in every
// Ω_j, all changes of one sign and at most C_obj), so Lap(C_obj/ε) makes the
// noisy max ε-DP, i.e. ε²/2-zCDP (Lee and Kifer 2018 Lemma 3.7). The averaged gradient is
// unbiased with the variance of one ρ'-measurement; the unnormalized
// gradients are averaged (the slides average the normalized ones, but the
// weights assume equal scales), then normalized again. Φ is α_max·{0, 1/n,
// …, 1}; every StepEvery rounds α_max ← (1+γ)·max of the steps taken in
// them (Lee and Kifer's step-size range). Noise comes from the streams
// ("agd-gradient", t, k) and ("agd-max", t, k), k the attempt in the round.
//
// A release is made only after the ledger has accepted its cost, and a
// round starts only when its gradient and a noisy max fit (Affordable), so
// the ledger never exceeds its total. The guarantee is the ledger's total:
// the expenses are chosen adaptively (ρ_ng grows with the outcomes), which
// the fixed total bounds as a privacy filter; the realized spending is
// reported but is not the guarantee.
type AGD struct {
	Clip      float64 // C: the updates' clip norm (the gradient's sensitivity)
	LossClip  float64 // C_obj: bound on each client's loss in the noisy max
	RhoNG     float64 // current gradient budget ρ_ng
	RhoMax    float64 // budget of one noisy max ρ_nmax
	Growth    float64 // γ
	Steps     int     // nonzero step-size candidates n
	MaxStep   float64 // α_max
	StepEvery int     // τ: rounds between α_max updates
	Ledger    *privacy.Ledger
	Root      rng.Root

	sum, noisy []float64
	attempt    int
	steps      []float64 // steps taken since the last α_max update
	last       AGDRound
}

// AGDRound reports a DP-AGD round.
type AGDRound struct {
	Step     float64 // the step taken (0: none, the budget ran out)
	Attempts int     // noisy maxes run (1 + gradient re-measurements)
	RhoNG    float64 // gradient budget at the round's end
	Spent    float64 // ledger total spent after the round
}

// Validate reports bad settings.
func (a *AGD) Validate() error {
	switch {
	case !(a.Clip > 0) || math.IsInf(a.Clip, 0):
		return fmt.Errorf("aggregators: dp-agd: clip %v must be positive", a.Clip)
	case !(a.LossClip > 0) || math.IsInf(a.LossClip, 0):
		return fmt.Errorf("aggregators: dp-agd: loss clip %v must be positive", a.LossClip)
	case !(a.RhoNG > 0) || !(a.RhoMax > 0) || math.IsInf(a.RhoNG+a.RhoMax, 0):
		return fmt.Errorf("aggregators: dp-agd: budgets ρ_ng %v and ρ_nmax %v must be positive", a.RhoNG, a.RhoMax)
	case !(a.Growth > 0) || math.IsInf(a.Growth, 0):
		return fmt.Errorf("aggregators: dp-agd: growth γ %v must be positive", a.Growth)
	case a.Steps < 1 || a.StepEvery < 1:
		return fmt.Errorf("aggregators: dp-agd: %d step candidates and α_max updates every %d rounds: both must be at least 1", a.Steps, a.StepEvery)
	case !(a.MaxStep > 0) || math.IsInf(a.MaxStep, 0):
		return fmt.Errorf("aggregators: dp-agd: largest step %v must be positive", a.MaxStep)
	case a.Ledger == nil:
		return fmt.Errorf("aggregators: dp-agd without a ledger")
	}
	return nil
}

// Affordable reports whether a round (a gradient and a noisy max at the
// current budgets) fits in what the ledger has left.
func (a *AGD) Affordable() bool { return a.Ledger.CanSpend(a.RhoNG + a.RhoMax) }

// Last returns the report of the last round.
func (a *AGD) Last() AGDRound { return a.last }

// Gradient sums the clipped deltas of round t (a ClippedSum of d
// coordinates at Clip) and releases the noisy sum (Release).
func (a *AGD) Gradient(round int, deltas iter.Seq[[]float32], d int) (Report, error) {
	if err := a.CheckRound(round); err != nil {
		return Report{}, err
	}
	sum := NewClippedSum(d, a.Clip)
	sum.AddAll(deltas)
	return a.Release(round, sum)
}

// CheckRound reports an error when round t does not fit in the budget left
// (see Affordable): its updates need not be trained.
func (a *AGD) CheckRound(round int) error {
	if !a.Affordable() {
		return fmt.Errorf("aggregators: dp-agd: round %d does not fit in the budget left (%.6g of %.6g)", round, a.Ledger.Remaining(), a.Ledger.Total())
	}
	return nil
}

// Release releases round t's gradient, the cohort's sum of updates clipped
// at Clip, with Gaussian noise at the current ρ_ng, paying for it first.
// The sum is copied (a re-measurement adds fresh noise to it).
func (a *AGD) Release(round int, sum *ClippedSum) (Report, error) {
	if err := a.CheckRound(round); err != nil {
		return Report{}, err
	}
	d := sum.Len()
	if sum.Clip() != a.Clip {
		return Report{}, fmt.Errorf("aggregators: dp-agd: round %d: a sum clipped at %v, not at %v", round, sum.Clip(), a.Clip)
	}
	if len(a.sum) != d {
		a.sum, a.noisy = make([]float64, d), make([]float64, d)
	}
	copy(a.sum, sum.Vector())
	rep := sum.Report()
	if err := a.Ledger.SpendGaussian(round, "gradient", privacy.GaussianSigma(a.RhoNG)); err != nil {
		return rep, err
	}
	a.attempt = 0
	rep.NoiseStd = a.Clip * privacy.GaussianSigma(a.RhoNG)
	rep.NoiseNorm = a.measure(a.noisy, round, rep.NoiseStd)
	a.last = AGDRound{Attempts: 0, RhoNG: a.RhoNG, Spent: a.Ledger.Spent()}
	return rep, nil
}

// measure writes g + std·z into dst (z from the attempt's stream) and
// returns the noise's norm.
func (a *AGD) measure(dst []float64, round int, std float64) float64 {
	r := a.Root.Stream("agd-gradient", uint64(round), uint64(a.attempt))
	var nn float64
	for i, g := range a.sum {
		e := std * r.NormFloat64()
		dst[i] = g + e
		nn += e * e
	}
	return math.Sqrt(nn)
}

// Candidates returns the step sizes Φ: 0 then α_max·k/n, k = 1..n.
func (a *AGD) Candidates() []float64 {
	out := make([]float64, a.Steps+1)
	for k := 1; k <= a.Steps; k++ {
		out[k] = a.MaxStep * float64(k) / float64(a.Steps)
	}
	return out
}

// Direction writes the unit noisy gradient u = g̃/‖g̃‖ into dst (zero when
// g̃ is zero).
func (a *AGD) Direction(dst []float32) {
	var s float64
	for _, x := range a.noisy {
		s += x * x
	}
	inv := 0.0
	if s > 0 {
		inv = 1 / math.Sqrt(s)
	}
	for i, x := range a.noisy {
		dst[i] = float32(x * inv)
	}
}

// Choose runs the noisy max of round t over the candidates' clipped loss
// sums (losses[j] for Candidates()[j], each a sum of per-client losses
// clipped to [0, LossClip]), paying ρ_nmax first, and returns the index
// chosen. A positive index is a step; the round is then over.
func (a *AGD) Choose(round int, losses []float64) (int, error) {
	if len(losses) != a.Steps+1 {
		return 0, fmt.Errorf("aggregators: dp-agd: %d losses for %d candidates", len(losses), a.Steps+1)
	}
	eps := privacy.PureDPEpsilon(a.RhoMax)
	if err := a.Ledger.SpendPureDP(round, "noisy-max", eps); err != nil {
		return 0, err
	}
	j := NoisyMax(losses, a.LossClip/eps, a.Root.Stream("agd-max", uint64(round), uint64(a.attempt)))
	a.last.Attempts++
	a.last.Spent = a.Ledger.Spent()
	if j > 0 {
		step := a.Candidates()[j]
		a.last.Step = step
		a.steps = append(a.steps, step)
		if len(a.steps) == a.StepEvery {
			a.MaxStep = (1 + a.Growth) * slices.Max(a.steps)
			a.steps = a.steps[:0]
		}
	}
	return j, nil
}

// Remeasure is the "no step" branch of round t: it raises ρ_ng by (1+γ),
// measures the gradient again with the difference and averages the two. It
// returns false, spending nothing, when the new measurement and another
// noisy max do not fit in the budget left (the round ends without a step).
func (a *AGD) Remeasure(round int) (bool, error) {
	old := a.RhoNG
	next := (1 + a.Growth) * old
	if !a.Ledger.CanSpend(next - old + a.RhoMax) {
		return false, nil
	}
	if err := a.Ledger.SpendGaussian(round, "gradient-avg", privacy.GaussianSigma(next-old)); err != nil {
		return false, err
	}
	a.attempt++
	second := make([]float64, len(a.sum))
	a.measure(second, round, a.Clip*privacy.GaussianSigma(next-old))
	for i := range a.noisy {
		a.noisy[i] = (old*a.noisy[i] + (next-old)*second[i]) / next
	}
	a.RhoNG = next
	a.last.RhoNG, a.last.Spent = next, a.Ledger.Spent()
	return true, nil
}

// NoisyMax returns argmax_j (−losses[j] + Lap(scale)) with the Laplace
// noise drawn from r (the lowest index on a tie): report-noisy-max of Lee and Kifer 2018
// Algorithm 1 on −Ω, ε-DP for losses monotone in a record with sensitivity
// scale·ε.
func NoisyMax(losses []float64, scale float64, r interface{ ExpFloat64() float64 }) int {
	best, arg := math.Inf(-1), 0
	for j, l := range losses {
		v := -l + scale*(r.ExpFloat64()-r.ExpFloat64()) // Laplace(scale): difference of two Exp(1)
		if v > best {
			best, arg = v, j
		}
	}
	return arg
}
