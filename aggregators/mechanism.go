package aggregators

import (
	"fmt"
	"math"

	"dpfl/aggregators/strategy"
	"dpfl/participation"
	"dpfl/privacy"
	"dpfl/sim/rng"
)

// Mechanism is one differentially private aggregation mechanism as a value:
// everything its privacy depends on, in one place (jax_privacy's
// DPExecutionPlan: batch selection, noise and privacy event together). It is
// the Gaussian mechanism G ↦ C G + σ·clip·sens·Z over the rounds' clipped sums
// G, for the strategy C (strategy.Identity for DP-FedAvg), the participation
// schema the sensitivity sens of C is computed for, the Poisson sampling
// that amplifies it (if any), and the fixed denominator of the noisy sum.
//
// A Mechanism is planned once the schedule is known (NewMechanism) and does
// not change; Event, Noise and Aggregator derive what accounting and training
// need from it.
type Mechanism struct {
	Strategy strategy.Strategy
	// Pattern is the participation pattern Sensitivity is computed for: one
	// that contains every client's participations in the realized schedule
	// (see NewMechanism).
	Pattern     participation.Pattern
	Sensitivity strategy.Sensitivity // of Strategy under Pattern, for clip 1
	// Sampling is the Poisson sampling of the clients (nil: none). With it,
	// the mechanism is accounted as sampled Gaussians, one per chance a
	// client has to take part, at sensitivity 1 in units of Sensitivity
	// (amplification by sampling).
	Sampling *Sampling
	// Denominator is the fixed divisor of the noisy sum: the target cohort,
	// or the expected one under sampling.
	Denominator float64
	// ClipCount is the noisy count adaptive clipping releases every round
	// (nil: fixed clipping); see WithClipCount.
	ClipCount *ClipCount
	// WOR is the fixed-size cohort drawn without replacement that amplifies
	// the mechanism (nil: none); see WithoutReplacement.
	WOR *WithoutReplacement
	// participations[t] is the most participations of any one client in
	// rounds 0..t (independent noise without sampling: the rounds compose).
	participations []int
	maxK           int // the most participations of any one client in the run
}

// ClipCount is adaptive clipping's per-round release of the number of
// unclipped clients, centered (Σ (b_i − ½), so one client changes it by at
// most ½ under zero-out adjacency) plus N(0, Std²) noise (AdaptiveClip).
// Relative to its sensitivity ½ its noise multiplier is 2·Std.
type ClipCount struct{ Std float64 }

// WithClipCount returns a copy of m whose events include adaptive
// clipping's noisy count with noise std std (σ_b > 0). It is refused for
// kb-poisson sampling, whose amplification (Choquette-Choo et al. 2023 §5) has not been derived
// for the pair of releases.
func (m *Mechanism) WithClipCount(std float64) (*Mechanism, error) {
	if !(std > 0) || math.IsInf(std, 0) {
		return nil, fmt.Errorf("aggregators: adaptive clipping's count noise std %v must be positive and finite", std)
	}
	if m.Sampling != nil && m.Sampling.Groups > 0 {
		return nil, fmt.Errorf("aggregators: adaptive clipping with kb-poisson sampling is not supported: amplification is proved for the banded update alone, not for the pair of update and count")
	}
	c := *m
	c.ClipCount = &ClipCount{Std: std}
	return &c, nil
}

// Sampling is Poisson sampling of the clients.
type Sampling struct {
	// Q is the probability that a client takes part in a round where it
	// may.
	Q float64
	// Groups is the number of client groups taking turns (kb-poisson: b;
	// a client may take part only in its group's rounds, one chance every
	// Groups rounds); 0 for Poisson sampling of every client in every round.
	Groups int
	// Bins: the groups are balls-in-bins' independent random bins (Q = 1:
	// the run's account composes the turns unamplified).
	Bins bool
}

// chances is the number of chances a client has in rounds 0..t-1.
func (s *Sampling) chances(t int) int {
	if s.Groups == 0 {
		return t
	}
	return ceilDiv(t, s.Groups)
}

// NewMechanism plans the mechanism of strategy s (built for
// ContainingPattern(declared, st)) on a realized schedule, planned and
// audited under the declared schema, with statistics st. Its sensitivity is
// computed for:
//   - sampled schemas (poisson, kb-poisson): one participation (the
//     sampled chances are composed by the accountant, amplified);
//   - strategies with independent noise in every round (C = I, DP-FedAvg):
//     at most k participations, k the realized maximum (sens = √k; the
//     rounds are accounted as the composition of each client's realized
//     participations, so only their number matters);
//   - other strategies: ContainingPattern(declared, st), accounted as one
//     Gaussian mechanism over the whole run.
//
// The denominator is the schedule's target cohort, or under sampling the
// expected one: q · clients (poisson), q · clients / b (kb-poisson, Choquette-Choo et al. 2023
// §5).
func NewMechanism(s strategy.Strategy, declared participation.Schema, sched *participation.Schedule, st participation.Stats) (*Mechanism, error) {
	m := &Mechanism{Strategy: s, Denominator: float64(sched.Cohort)}
	if pt := declared.Pattern(); pt.Sampled() {
		m.Sampling = &Sampling{Q: pt.Sampling, Groups: pt.Groups, Bins: pt.RandomGroups}
		m.Denominator = pt.Sampling * float64(sched.NumClients)
		if pt.Groups > 0 {
			m.Denominator /= float64(pt.Groups)
		}
	}
	k := max(1, st.MaxParticipations)
	m.maxK = k
	if lim := declared.MaxParticipations(s.N()); m.Sampling == nil && k > lim {
		return nil, fmt.Errorf("aggregators: realized %d participations exceed the schema's bound of %d", k, lim)
	}
	switch {
	case m.Sampling != nil:
		m.Pattern = participation.AtMostOnce
	case m.Independent():
		m.Pattern = participation.AtMostOnce
		if k > 1 {
			m.Pattern = participation.Spaced(k, max(1, st.MinSeparation))
		}
		m.participations = sched.ParticipationsThrough()
	default:
		m.Pattern = ContainingPattern(declared, st)
	}
	sens, err := s.Sensitivity(m.Pattern)
	if err != nil {
		return nil, err
	}
	m.Sensitivity = sens
	return m, nil
}

// ContainingPattern is the participation pattern a correlated strategy is
// built and its sensitivity computed for, given the declared schema and the
// realized schedule's statistics: one that contains every client's realized
// participations. It is at most one participation when no client takes part
// twice (and for groups sampled in turns, whose one participation per turn
// is amplified); the declared groups taking turns; a declared minimum
// separation tightened by the realized maximum k and smallest separation;
// otherwise at most the realized maximum k, at least the realized smallest
// separation apart.
func ContainingPattern(declared participation.Schema, st participation.Stats) participation.Pattern {
	k := max(1, st.MaxParticipations)
	switch pt := declared.Pattern(); {
	case k == 1 || pt.SampledTurns():
		return participation.AtMostOnce
	case pt.Groups > 0 && !pt.Sampled():
		return participation.Turns(pt.MaxParticipations, pt.Groups)
	case pt.MinSeparation > 0 && !pt.Sampled():
		return participation.Spaced(min(pt.MaxParticipations, k), max(pt.MinSeparation, st.MinSeparation))
	}
	return participation.Spaced(k, max(1, st.MinSeparation))
}

// Independent reports whether the mechanism's noise is independent in every
// round (C = I: DP-FedAvg, DP-SGD).
func (m *Mechanism) Independent() bool { return independent(m.Strategy) }

// Amplified reports whether the mechanism is accounted with amplification by
// sampling.
func (m *Mechanism) Amplified() bool { return m.Sampling != nil || m.WOR != nil }

// WholeRun reports whether EventThrough is the whole run's event whatever
// the round: a correlated mechanism without sampling is one Gaussian
// mechanism over all rounds, so its epsilon "so far" is the final one, an
// upper bound for every prefix (a prefix is part of the final release).
func (m *Mechanism) WholeRun() bool { return !m.Amplified() && !m.Independent() }

// Event returns the privacy event of the whole run at noise multiplier sigma
// (relative to Sensitivity).
func (m *Mechanism) Event(sigma float64) privacy.Event { return m.EventThrough(sigma, m.Strategy.N()) }

// EventThrough returns the privacy event of rounds 0..t-1 (1 ≤ t ≤ N) at
// noise multiplier sigma:
//   - sampled: the composition of a Poisson-sampled Gaussian with noise
//     multiplier sigma over the chances a client has in those rounds (Choquette-Choo et al. 2023
//     §5 Thm 4 for kb-poisson: the rows a client's participations touch are
//     disjoint blocks, each an adaptive query on one Poisson sample);
//   - independent noise: each realized participation is a Gaussian
//     mechanism with noise multiplier sigma·sens (the noise std is
//     sigma·clip·sens, the query's sensitivity clip), composed over the
//     most participations of any client so far;
//   - correlated noise: one Gaussian mechanism with noise multiplier sigma
//     (the whole run, see WholeRun);
//   - a fixed-size cohort drawn without replacement (WOR): t rounds of a
//     Gaussian with noise multiplier sigma on a sample of Cohort of
//     Population clients (the sensitivity is 2, see WithoutReplacement).
//
// The neighbouring relation each event is stated under (privacy.Adjacency):
// add/remove for poisson (a client's update is in a round's sum or not);
// replace-one for WOR; zero-out for everything else: the schedule, and
// kb-poisson's equal split of the population into groups, do not depend on
// the data, so the guarantee compares a client's updates with none (a
// client whose updates are zero) in the same schedule, at sensitivity clip
// per participation. Removing a client from the population would change
// the draws and the split, which that guarantee does not cover.
//
// With adaptive clipping (ClipCount) each participation also releases the
// noisy count, a Gaussian with noise multiplier 2·Std on the same client:
//   - sampled: each chance is a Poisson-sampled pair, PoissonSampled(q,
//     Composed(Gaussian(sigma), Gaussian(2·Std))) (Andrew et al. 2021 §3:
//     the pair is one sampled Gaussian with 1/z² = 1/σ² + 1/(2σ_b)²);
//   - independent noise: each participation is the pair
//     Composed(Gaussian(sigma·sens), Gaussian(2·Std));
//   - correlated noise: Composed(Gaussian(sigma), SelfComposed(
//     Gaussian(2·Std), K)), K the most participations of any client in the
//     run: the update and the counts together are one Gaussian matrix
//     mechanism with the block-diagonal strategy diag(C, I) (see the
//     package documentation), whose μ² is at most the sum of the two.
func (m *Mechanism) EventThrough(sigma float64, t int) privacy.Event {
	var count privacy.Event
	if m.ClipCount != nil {
		count = privacy.Gaussian{NoiseMultiplier: 2 * m.ClipCount.Std}
	}
	pair := func(update privacy.Event) privacy.Event {
		if count == nil {
			return update
		}
		return privacy.Composed{Events: []privacy.Event{update, count}}
	}
	zeroOut := func(e privacy.Event) privacy.Event {
		return privacy.Neighbouring{Relation: privacy.ZeroOut, Event: e}
	}
	switch {
	case m.WOR != nil:
		return privacy.SelfComposed{Event: privacy.SampledWithoutReplacement{PopulationSize: m.WOR.Population, SampleSize: m.WOR.Cohort, Event: privacy.Gaussian{NoiseMultiplier: sigma}}, Count: t}
	case m.Sampling != nil && m.Sampling.Groups > 0:
		return zeroOut(privacy.SelfComposed{Event: privacy.PoissonSampled{Probability: m.Sampling.Q, Event: pair(privacy.Gaussian{NoiseMultiplier: sigma})}, Count: m.Sampling.chances(t)})
	case m.Sampling != nil:
		return privacy.SelfComposed{Event: privacy.PoissonSampled{Probability: m.Sampling.Q, Event: pair(privacy.Gaussian{NoiseMultiplier: sigma})}, Count: m.Sampling.chances(t)}
	case m.participations != nil:
		return zeroOut(privacy.SelfComposed{Event: pair(privacy.Gaussian{NoiseMultiplier: sigma * m.Sensitivity.Value}), Count: m.participations[t-1]})
	}
	if count == nil {
		return zeroOut(privacy.Gaussian{NoiseMultiplier: sigma})
	}
	return zeroOut(privacy.Composed{Events: []privacy.Event{privacy.Gaussian{NoiseMultiplier: sigma}, privacy.SelfComposed{Event: count, Count: m.maxK}}})
}

// NoiseStd is the per-coordinate standard deviation of the noise on the
// clipped sum at noise multiplier sigma: sigma · clip · sensitivity.
func (m *Mechanism) NoiseStd(clip, sigma float64) float64 { return sigma * clip * m.Sensitivity.Value }

// Noise returns the mechanism's streaming unit-scale noise for models of
// dimension d (see NoiseFor).
func (m *Mechanism) Noise(root rng.Root, d int, mode Mode) (NoiseSource, error) {
	return NoiseFor(m.Strategy, root, d, mode)
}

// Aggregator returns the aggregator of the mechanism at clip norm clip and
// noise multiplier sigma: each round it adds NoiseStd(clip, sigma) times the
// round's noise from src (see Noise) and divides by Denominator.
func (m *Mechanism) Aggregator(clip, sigma float64, src NoiseSource) *Correlated {
	return &Correlated{Clip: clip, NoiseStd: m.NoiseStd(clip, sigma), ExpectedCohort: m.Denominator, Noise: src}
}

// SensitivityFor says, for displays, what the sensitivity is of: a sampled
// chance (amplified), a client's realized participations (independent
// noise), or the strategy under its schema.
func (m *Mechanism) SensitivityFor() string {
	switch {
	case m.WOR != nil:
		return fmt.Sprintf("for one round's cohort of %d drawn without replacement from %d clients (replace-one: 2 × clip, amplified)", m.WOR.Cohort, m.WOR.Population)
	case m.Sampling != nil && m.Sampling.Bins:
		return fmt.Sprintf("for one participation, in each turn of its bin (balls-in-bins, %d bins; turns composed unamplified)", m.Sampling.Groups)
	case m.Sampling != nil && m.Sampling.Groups > 0:
		return fmt.Sprintf("for one participation, each of the %d groups Poisson-sampled with q = %g in its rounds (amplified)", m.Sampling.Groups, m.Sampling.Q)
	case m.Sampling != nil:
		return fmt.Sprintf("for one Poisson-sampled round (q = %g, amplified)", m.Sampling.Q)
	case m.Independent() && m.Pattern.Once():
		return "for one participation per client"
	case m.Independent():
		return fmt.Sprintf("for at most %d participations per client (√k)", m.Pattern.MaxParticipations)
	}
	bound := "exact"
	if !m.Sensitivity.Exact {
		bound = "an upper bound"
	}
	return fmt.Sprintf("for %s over %d rounds under %s (%s)", m.Strategy.String(), m.Strategy.N(), m.Pattern, bound)
}

// Parameters are the strategy's own parameters (its tuned ν, its BLT
// buffers), if it has any.
func (m *Mechanism) Parameters() strategy.Parameters {
	if ps, ok := m.Strategy.(strategy.Parameterized); ok {
		return ps.Parameters()
	}
	return strategy.Parameters{}
}

// independent reports whether s adds independent noise in every round.
func independent(s strategy.Strategy) bool {
	ind, ok := s.(strategy.Independent)
	return ok && ind.Independent()
}

// ceilDiv is ⌈a/b⌉ for b ≥ 1 (0 for a ≤ 0), without overflow.
func ceilDiv(a, b int) int {
	if a <= 0 {
		return 0
	}
	return (a-1)/b + 1
}
