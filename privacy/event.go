package privacy

import (
	"fmt"
	"math"
)

// Event is an immutable description of a privacy-relevant release. The
// concrete events are Gaussian, PureDP, SelfComposed, PoissonSampled and
// Composed; accountants consume them and never modify them.
type Event interface {
	isEvent()
	// String describes the event, e.g. "PoissonSampled(q=0.01, Gaussian(σ=1.1))".
	fmt.Stringer
}

// Gaussian is the Gaussian mechanism with noise multiplier NoiseMultiplier:
// the noise standard deviation divided by the query's L2 sensitivity. A
// NoiseMultiplier of +Inf releases nothing; it must be positive.
type Gaussian struct{ NoiseMultiplier float64 }

// PureDP is a release that satisfies Epsilon-differential privacy (delta = 0),
// for example report-noisy-max with Laplace noise. It is accounted by the RDP
// and zCDP accountants (Epsilon^2/2-zCDP, Lee and Kifer 2018 Lemma 3.7).
type PureDP struct{ Epsilon float64 }

// SelfComposed is Event repeated Count times (Count >= 0).
type SelfComposed struct {
	Event Event
	Count int
}

// PoissonSampled is Event run on a Poisson sample of the data: each record is
// included independently with probability Probability (the add/remove
// adjacency of the sampled-Gaussian analyses). Amplification holds only if the
// sampling really is Poisson; selection driven by availability is not.
type PoissonSampled struct {
	Probability float64
	Event       Event
}

// SampledWithoutReplacement is Event run on a subset of exactly SampleSize
// records drawn uniformly without replacement from PopulationSize records
// (like dp_accounting's SampledWithoutReplacementDpEvent). It is analysed
// under replace-one adjacency only (the population size is public), so the
// noise multipliers of Event are relative to the replace-one sensitivity:
// for a sum of vectors clipped to norm C, noise std / (2C). Amplification
// holds only if every draw really is uniform over the whole population.
type SampledWithoutReplacement struct {
	PopulationSize, SampleSize int
	Event                      Event
}

// Composed is the composition of different events, in order.
type Composed struct{ Events []Event }

func (Gaussian) isEvent()       {}
func (PureDP) isEvent()         {}
func (SelfComposed) isEvent()   {}
func (PoissonSampled) isEvent() {}
func (Composed) isEvent()       {}

func (SampledWithoutReplacement) isEvent() {}

// String implements Event.
func (s SampledWithoutReplacement) String() string {
	return fmt.Sprintf("SampledWithoutReplacement(%d of %d, %v)", s.SampleSize, s.PopulationSize, s.Event)
}

// Ratio is the sampling ratio SampleSize/PopulationSize.
func (s SampledWithoutReplacement) Ratio() float64 {
	return float64(s.SampleSize) / float64(s.PopulationSize)
}

// String implements Event.
func (g Gaussian) String() string { return fmt.Sprintf("Gaussian(σ=%g)", g.NoiseMultiplier) }

// String implements Event.
func (p PureDP) String() string { return fmt.Sprintf("PureDP(ε=%g)", p.Epsilon) }

// String implements Event.
func (s SelfComposed) String() string { return fmt.Sprintf("SelfComposed(%v, %d)", s.Event, s.Count) }

// String implements Event.
func (p PoissonSampled) String() string {
	return fmt.Sprintf("PoissonSampled(q=%g, %v)", p.Probability, p.Event)
}

// String implements Event.
func (c Composed) String() string { return fmt.Sprintf("Composed%v", c.Events) }

// Validate reports whether e and every event inside it are well formed:
// positive noise multipliers, non-negative finite epsilons and counts,
// probabilities in [0, 1], sample sizes between 0 and a positive population,
// no nil events, and one neighbouring relation throughout (AdjacencyOf).
func Validate(e Event) error {
	if err := validate(e); err != nil {
		return err
	}
	_, err := AdjacencyOf(e)
	return err
}

func validate(e Event) error {
	switch e := e.(type) {
	case nil:
		return fmt.Errorf("privacy: nil event")
	case Gaussian:
		if !(e.NoiseMultiplier > 0) { // also rejects NaN
			return fmt.Errorf("privacy: Gaussian noise multiplier must be positive, got %g", e.NoiseMultiplier)
		}
	case PureDP:
		if !(e.Epsilon >= 0) || math.IsInf(e.Epsilon, 1) {
			return fmt.Errorf("privacy: PureDP epsilon must be finite and non-negative, got %g", e.Epsilon)
		}
	case SelfComposed:
		if e.Count < 0 {
			return fmt.Errorf("privacy: SelfComposed count must be non-negative, got %d", e.Count)
		}
		return validate(e.Event)
	case PoissonSampled:
		if !(e.Probability >= 0 && e.Probability <= 1) {
			return fmt.Errorf("privacy: sampling probability must be in [0, 1], got %g", e.Probability)
		}
		return validate(e.Event)
	case SampledWithoutReplacement:
		if e.PopulationSize < 1 || e.SampleSize < 0 || e.SampleSize > e.PopulationSize {
			return fmt.Errorf("privacy: sample size %d must be between 0 and the population size %d (at least 1)", e.SampleSize, e.PopulationSize)
		}
		return validate(e.Event)
	case Neighbouring:
		return validate(e.Event)
	case Composed:
		for _, x := range e.Events {
			if err := validate(x); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("privacy: unknown event type %T", e)
	}
	return nil
}

// gaussianEquivalent reports whether e is a (composition of) Gaussian
// mechanisms on the same data, and if so the noise multiplier of the single
// Gaussian it is equivalent to: sigma = 1/sqrt(sum 1/sigma_i^2). Releasing
// several Gaussian views of the same query is exactly as private as one
// Gaussian with that multiplier (the precision-weighted mean is sufficient),
// so the equivalence is exact, also inside a Poisson sample. e must be valid.
func gaussianEquivalent(e Event) (sigma float64, ok bool) {
	mu2, ok := gaussianMu2(e)
	if !ok {
		return 0, false
	}
	return 1 / math.Sqrt(mu2), true
}

// gaussianMu2 returns sum 1/sigma_i^2 over the Gaussians in e (0 for an empty
// composition), or ok = false if e contains anything but Gaussians.
func gaussianMu2(e Event) (mu2 float64, ok bool) {
	switch e := e.(type) {
	case Gaussian:
		return 1 / (e.NoiseMultiplier * e.NoiseMultiplier), true
	case SelfComposed:
		m, ok := gaussianMu2(e.Event)
		return float64(e.Count) * m, ok
	case Composed:
		s := 0.0
		for _, x := range e.Events {
			m, ok := gaussianMu2(x)
			if !ok {
				return 0, false
			}
			s += m
		}
		return s, true
	case PoissonSampled:
		switch e.Probability {
		case 0:
			return 0, true
		case 1:
			return gaussianMu2(e.Event)
		}
	case SampledWithoutReplacement:
		switch e.SampleSize {
		case 0:
			return 0, true
		case e.PopulationSize:
			return gaussianMu2(e.Event)
		}
	case Neighbouring:
		return gaussianMu2(e.Event)
	}
	return 0, false
}
