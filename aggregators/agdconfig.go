package aggregators

import "math"

// AGDConfig is the dp-agd kind's own parameters (see AGD). The budget is
// privacy.epsilon at privacy.delta, turned into a total zCDP ρ by the
// accountant's conversion (zcdp-cks by default: the tight one); the shares
// are fractions of that ρ. aggregator.clip is the updates' clip norm C.
type AGDConfig struct {
	// GradientShare: the first noisy gradient's budget ρ_ng as a fraction
	// of the total (default 0.02).
	GradientShare float64 `yaml:"gradient_share"`
	// SelectShare: each noisy max's budget ρ_nmax as a fraction of the
	// total (default 0.01).
	SelectShare float64 `yaml:"select_share"`
	// BudgetGrowth: γ, the factor (1 + γ) by which ρ_ng grows when "no
	// step" wins, and of the step-size range's update (default 0.1).
	BudgetGrowth float64 `yaml:"budget_growth"`
	// StepCandidates: the nonzero step sizes n of Φ = α_max·{0, 1/n, …, 1}
	// (default 5, at most MaxStepCandidates; each costs a loss evaluation
	// of the whole cohort per noisy max).
	StepCandidates int `yaml:"step_candidates"`
	// MaxStep: the first α_max, the largest step in parameter space
	// (default 1).
	MaxStep float64 `yaml:"max_step"`
	// StepEvery: τ, rounds between updates of α_max to (1 + γ) times the
	// largest step of those rounds (default 10).
	StepEvery int `yaml:"step_every"`
	// LossClip: C_obj, the bound each client's mean loss is clipped to in
	// the noisy max (its sensitivity; default 3, above ln 10).
	LossClip float64 `yaml:"loss_clip"`
}

// MaxStepCandidates bounds step_candidates: each candidate step costs a
// loss evaluation of the whole cohort in every noisy max, and the
// candidates are held in memory.
const MaxStepCandidates = 100

func (a *AGDConfig) normalize() {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&a.GradientShare, 0.02)
	def(&a.SelectShare, 0.01)
	def(&a.BudgetGrowth, 0.1)
	def(&a.MaxStep, 1)
	def(&a.LossClip, 3)
	if a.StepCandidates == 0 {
		a.StepCandidates = 5
	}
	if a.StepEvery == 0 {
		a.StepEvery = 10
	}
}

func (a *AGDConfig) validate(c *Config, r Run, add Problems) {
	positive := func(key string, v float64) {
		if !(v > 0) || math.IsInf(v, 0) {
			add(key, "%v must be a positive finite number", v)
		}
	}
	positive("budget_growth", a.BudgetGrowth)
	positive("max_step", a.MaxStep)
	positive("loss_clip", a.LossClip)
	for _, s := range []struct {
		key string
		v   float64
	}{{"gradient_share", a.GradientShare}, {"select_share", a.SelectShare}} {
		if !(s.v > 0 && s.v <= 1) {
			add(s.key, "%v must be in (0, 1] (a fraction of the total zCDP budget)", s.v)
		}
	}
	if a.GradientShare+a.SelectShare > 1 {
		add("select_share", "gradient_share %v + select_share %v exceed the whole budget: not one round fits", a.GradientShare, a.SelectShare)
	}
	if a.StepCandidates < 1 {
		add("step_candidates", "%d must be at least 1", a.StepCandidates)
	} else if a.StepCandidates > MaxStepCandidates {
		add("step_candidates", "%d is more than %d: each candidate costs a loss evaluation of the whole cohort in every noisy max", a.StepCandidates, MaxStepCandidates)
	}
	if a.StepEvery < 1 {
		add("step_every", "%d must be at least 1", a.StepEvery)
	}
	if c.NoiseMultiplier != nil {
		add("noise_multiplier", "dp-agd sets its own noise from privacy.epsilon's zCDP budget: remove noise_multiplier")
	}
	if c.Adaptive() {
		add("clip_quantile", "not with dp-agd (its budget covers the gradients and step choices only)")
	}
	if r.Participation.Kind.Sampled() {
		add("kind", "dp-agd with %s sampling is not supported: its zCDP ledger has no amplification by sampling (use an unsampled participation kind)", r.Participation.Kind)
	}
}
