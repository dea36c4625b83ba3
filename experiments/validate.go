package experiments

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"dpfl/aggregators"
	"dpfl/datasets"
	"dpfl/models"
	"dpfl/participation"
	"dpfl/privacy"
	"dpfl/sim/registry"
	"dpfl/sim/rng"
)

// Known values of the configuration's kind fields.
var (
	Availabilities []string // participation.availability.kind (RegisterAvailability)
	LRSchedules    = []string{"constant", "linear", "cosine"}
)

// Normalize fills in the defaults of unset optional fields.
func (c *Config) Normalize() {
	if c.Name == "" {
		c.Name = "run"
	}
	c.Data.Normalize()
	c.Model.Normalize()
	if c.Client.Epochs == 0 {
		c.Client.Epochs = 1
	}
	if c.Client.BatchSize == 0 {
		c.Client.BatchSize = 10
	}
	pc := &c.Participation
	if pc.Kind == "" {
		pc.Kind = participation.Uniform
	}
	pc.Kind = participation.Canonical(pc.Kind)
	if pc.Availability.Kind == "" {
		pc.Availability.Kind = defaultAvailability
	}
	if pc.Clock.RoundMinutes == 0 {
		pc.Clock.RoundMinutes = 10
	}
	if pc.Clock.WaitMinutes == 0 {
		pc.Clock.WaitMinutes = pc.Clock.RoundMinutes
	}
	if k, ok := lookupAvailability(pc.Availability.Kind); ok && k.Defaults != nil {
		k.Defaults(&pc.Availability)
	}
	c.Aggregator.Normalize()
	if c.Privacy.Accountant == "" {
		c.Privacy.Accountant = privacy.DefaultAccountant(pc.Kind.Sampled() || c.Privacy.Amplification == AmplificationWOR, c.AGD())
	}
	if c.Server.Optimizer == "" {
		c.Server.Optimizer = aggregators.DefaultServerOptimizer
	}
	sv := &c.Server
	sv.NormalizeSchedule()
	if k, ok := aggregators.LookupServerOptimizer(sv.Optimizer); ok && k.Defaults != nil {
		p := sv.params()
		k.Defaults(&p)
		sv.setParams(p)
	}
	if c.Eval.Every == 0 && c.Rounds > 0 {
		c.Eval.Every = max(1, c.Rounds/20)
	}
	if c.Eval.Batch == 0 {
		c.Eval.Batch = 500
	}
	c.Audit.normalize()
}

// Private reports whether the run adds noise.
func (c *Config) Private() bool {
	return c.Privacy.Epsilon != nil || (c.Aggregator.NoiseMultiplier != nil && *c.Aggregator.NoiseMultiplier > 0)
}

// Validate reports every problem with the (normalized) configuration at once,
// each naming its key and, through src, its line. Its memory estimate is held
// to the default Limits.
func (c *Config) Validate(src *Source) error { return Limits{}.Validate(c, src) }

// Validate is Config.Validate with the memory estimate held to l.
func (l Limits) Validate(c *Config, src *Source) error {
	var errs []error
	add := func(path, format string, args ...any) {
		errs = append(errs, src.problem(path, format, args...))
	}
	oneOf := func(path, v string, allowed []string) {
		if v == "" {
			add(path, "required (one of %v)", allowed)
		} else if !slices.Contains(allowed, v) {
			add(path, "unknown value %q (want one of %v)", v, allowed)
		}
	}
	positive := func(path string, v float64) {
		if src.Line(path) == 0 && v == 0 {
			add(path, "required (a positive number)")
		} else if !(v > 0) || math.IsInf(v, 0) {
			add(path, "%v must be a positive finite number", v)
		}
	}
	positiveInt := func(path string, v int) {
		if src.Line(path) == 0 && v == 0 {
			add(path, "required (a positive integer)")
		} else if v <= 0 {
			add(path, "%d must be positive", v)
		}
	}

	if msg := nameProblem(c.Name); msg != "" {
		add("name", "%s", msg)
	}
	positiveInt("rounds", c.Rounds)
	c.validateData(add, src)
	c.validateModel(add, oneOf)
	positiveInt("client.epochs", c.Client.Epochs)
	positiveInt("client.batch_size", c.Client.BatchSize)
	positive("client.lr", c.Client.LR)
	if c.Client.MaxExamples < 0 {
		add("client.max_examples", "%d must not be negative (0 uses every example)", c.Client.MaxExamples)
	}
	c.validateParticipation(add, oneOf, positive, positiveInt)
	c.Aggregator.Validate(c.aggregatorRun(), func(key, format string, args ...any) { add("aggregator."+key, format, args...) })
	positive("aggregator.clip", c.Aggregator.Clip)

	c.validatePrivacy(add, oneOf, l, src)
	oneOf("server.optimizer", c.Server.Optimizer, aggregators.ServerOptimizerNames())
	if c.AGD() {
		c.validateAGD(add)
	} else {
		positive("server.lr", c.Server.LR)
	}
	if c.Server.Momentum < 0 || c.Server.Momentum >= 1 {
		add("server.momentum", "%v must be in [0, 1)", c.Server.Momentum)
	}
	c.validateOptimizer(add)
	c.validateSchedule(add)
	c.validateAudit(add, oneOf, src)
	if c.Rounds > 0 || src.Line("eval.every") > 0 {
		positiveInt("eval.every", c.Eval.Every) // (its default is rounds/20)
	}
	positiveInt("eval.batch", c.Eval.Batch)
	if v := c.Eval.Validation; !(v >= 0 && v < 1) {
		add("eval.validation", "%v must be in [0, 1) (the share of the test set held out for validation)", v)
	}
	c.validateMemory(add, l)
	return errors.Join(errs...)
}

// validatePrivacy checks the privacy section: the target ε or the noise
// multiplier (one of them), δ, the accountant and the population scale.
func (c *Config) validatePrivacy(add addFunc, oneOf oneOfFunc, l Limits, src *Source) {
	nm, eps := c.Aggregator.NoiseMultiplier, c.Privacy.Epsilon
	switch {
	case nm == nil && eps == nil:
		add("privacy.epsilon", "required: set privacy.epsilon (a target) or aggregator.noise_multiplier (0 for no privacy)")
	case nm != nil && eps != nil:
		add("aggregator.noise_multiplier", "set either aggregator.noise_multiplier or privacy.epsilon, not both")
	case nm != nil && (*nm < 0 || math.IsNaN(*nm) || math.IsInf(*nm, 0)):
		add("aggregator.noise_multiplier", "%v must be a finite number >= 0", *nm)
	case eps != nil && !(*eps > 0 && !math.IsInf(*eps, 0)):
		add("privacy.epsilon", "%v must be a positive finite number", *eps)
	}
	if c.Private() {
		if c.Privacy.Delta == 0 && src.Line("privacy.delta") == 0 {
			add("privacy.delta", "required for a private run (a probability in (0, 1), %s)", c.deltaBound(l, src))
		} else if !(c.Privacy.Delta > 0 && c.Privacy.Delta < 1) {
			add("privacy.delta", "%v must be in (0, 1)", c.Privacy.Delta)
		} else if n := addCounts(c.Data.Clients, max(0, c.Audit.Canaries)); !c.Privacy.AllowLargeDelta && c.Data.Clients > 0 && !c.Data.FromData() && c.Privacy.Delta*float64(n) >= 1 {
			// The population is data.clients (and the canaries): checked
			// here, with the other problems, rather than when planning.
			add("privacy.delta", "%s", largeDelta(c.Privacy.Delta, n))
		}
	}
	oneOf("privacy.accountant", c.Privacy.Accountant, privacy.AccountantNames())
	if s := c.Privacy.PopulationScale; s != 0 {
		switch {
		case !(s >= 1) || math.IsInf(s, 0):
			add("privacy.population_scale", "%v must be at least 1 (a population that many times larger; 0 or 1: off)", s)
		case !c.Private():
			add("privacy.population_scale", "has no effect without noise (set privacy.epsilon)")
		case c.Participation.Kind.Sampled():
			add("privacy.population_scale", "cannot scale %s sampling: its amplification depends on the population (remove population_scale)", c.Participation.Kind)
		case c.Aggregator.Adaptive():
			add("privacy.population_scale", "not with adaptive clipping (aggregator.clip_quantile): the clip count's noise is not scaled to the larger population, so the pair's guarantee would not be the one reported")
		}
	}
	if a := newAccountant(c.Privacy.Accountant); a != nil && c.Participation.Kind.Sampled() && a.Supports(sampledGaussian) != nil {
		add("privacy.accountant", "%s cannot account Poisson sampling (use rdp or pld)", c.Privacy.Accountant)
	}
	c.validateAmplification(add)
}

// worGaussian stands for the events of sampling without replacement when
// validating the accountant.
var worGaussian = privacy.SampledWithoutReplacement{PopulationSize: 2, SampleSize: 1, Event: privacy.Gaussian{NoiseMultiplier: 1}}

// validateAmplification checks privacy.amplification: the schedule and the
// aggregator must be what its analysis assumes. A run that asks for it and
// does not qualify is refused (not accounted unamplified with a warning):
// the user asked for the amplified ε and would otherwise get a different
// one than expected.
func (c *Config) validateAmplification(add addFunc) {
	const key = "privacy.amplification"
	amp, pc := c.Privacy.Amplification, c.Participation
	if c.Privacy.MonteCarloSamples != 0 && amp != AmplificationBIB {
		add("privacy.monte_carlo_samples", "applies only with privacy.amplification: %s (Monte Carlo accounting)", AmplificationBIB)
	}
	switch {
	case amp == "":
		return
	case amp == AmplificationBIB:
		c.validateBIB(add)
		return
	case amp != AmplificationWOR:
		add(key, "unknown %q (want %s or %s, or leave it out)", amp, AmplificationWOR, AmplificationBIB)
	case !c.Private():
		add(key, "has no effect without noise (set privacy.epsilon or a positive aggregator.noise_multiplier)")
	case !pc.Kind.Pattern().Unbounded():
		add(key, "%s needs participation.kind uniform (a fixed-size cohort drawn uniformly each round), not %s", amp, pc.Kind)
	case !everyoneAvailable(pc.Availability):
		add(key, "%s needs participation.availability.kind always: a cohort drawn from the clients available at the time is not a uniform sample of the population", amp)
	case c.Aggregator.Kind != "dpfedavg":
		add(key, "%s is accounted for aggregator.kind dpfedavg only (independent noise every round), not %s", amp, c.Aggregator.Kind)
	case c.Aggregator.Adaptive():
		add(key, "%s with adaptive clipping (aggregator.clip_quantile) is not supported", amp)
	case c.Privacy.PopulationScale != 0:
		add(key, "%s cannot be combined with privacy.population_scale: the amplification depends on the real population", amp)
	}
	if a := newAccountant(c.Privacy.Accountant); a != nil && amp == AmplificationWOR && a.Supports(worGaussian) != nil {
		add("privacy.accountant", "%s cannot account sampling without replacement (use rdp or pld)", c.Privacy.Accountant)
	}
}

// maxMonteCarloSamples bounds privacy.monte_carlo_samples (two float64
// losses per sample are kept when the guarantee is estimated: 160 MB).
const maxMonteCarloSamples = 10_000_000

// maxMonteCarloWork bounds the arithmetic of one pass over the Monte Carlo
// samples (bibWork); calibration makes about a dozen.
const maxMonteCarloWork = 2e10

// bibWork is about the operations of one pass over samples losses of each
// side with b bins (the triangular b×b product of each sample).
func bibWork(samples, bins int) float64 {
	return 2 * float64(samples) * (float64(bins)*float64(bins)/2 + 3*float64(bins))
}

// bibKinds are the aggregator kinds whose C is banded, lower triangular
// and non-negative, as the balls-in-bins pair needs (the realized C is
// checked again when planning).
var bibKinds = []string{"dpfedavg", "bandmf"}

// validateBIB checks privacy.amplification: balls-in-bins: the
// participation, availability and mechanism must be those its dominating
// pair is proved for (every problem is a refusal, naming the key).
func (c *Config) validateBIB(add addFunc) {
	const key = "privacy.amplification"
	pc, ag := c.Participation, c.Aggregator
	if n := c.Privacy.MonteCarloSamples; n < 0 || n > maxMonteCarloSamples {
		add("privacy.monte_carlo_samples", "%d must be in [0, %d] (0: the default)", n, maxMonteCarloSamples)
	} else if d := c.Privacy.Delta; d > 0 && d < 1 && pc.B > 0 {
		if n := c.monteCarloSamples(); n > maxMonteCarloSamples || bibWork(n, pc.B) > maxMonteCarloWork {
			add(key, "balls-in-bins' Monte Carlo account with participation.b = %d bins and %d samples (privacy.monte_carlo_samples, default ⌈4·log(200)/δ⌉) is about %.2g operations per pass, above the limit of %.0g (or more than %d samples): use fewer bins or a larger privacy.delta", pc.B, n, bibWork(n, pc.B), maxMonteCarloWork, maxMonteCarloSamples)
		}
	}
	switch {
	case !c.Private():
		add(key, "has no effect without noise (set privacy.epsilon or a positive aggregator.noise_multiplier)")
	case !pc.Kind.Pattern().RandomGroups:
		add(key, "balls-in-bins needs participation.kind balls-in-bins (each client in every turn of one secret random bin), not %s", pc.Kind)
	case !everyoneAvailable(pc.Availability):
		add(key, "balls-in-bins needs participation.availability.kind always: a bin whose members train only when available is not the schedule the amplification is proved for")
	case c.AGD():
		add(key, "balls-in-bins is not accounted for dp-agd: its releases are not one banded matrix mechanism at a fixed noise")
	case !slices.Contains(bibKinds, ag.Kind):
		add(key, "balls-in-bins needs a banded matrix mechanism (aggregator.kind %s), not %s: its dominating pair is proved for C lower triangular, non-negative, with at most participation.b bands", strings.Join(bibKinds, ", "), ag.Kind)
	case ag.Adaptive():
		add(key, "balls-in-bins with adaptive clipping (aggregator.clip_quantile) is not supported: the clip count's release is not part of the pair")
	case c.Privacy.PopulationScale != 0:
		add(key, "balls-in-bins cannot be combined with privacy.population_scale: the amplification depends on the real population's bins")
	}
}

// nameProblem says why name cannot name a run folder ("" when it can): it
// becomes one path element under the output folder, so it must not be blank,
// hold a path separator or "..", or control characters.
func nameProblem(name string) string {
	switch {
	case strings.TrimSpace(name) == "":
		return "must not be blank"
	case strings.ContainsAny(name, `/\`):
		return fmt.Sprintf("%q must not contain a path separator (/ or \\): it names one folder under the output folder", name)
	case strings.Contains(name, ".."):
		return fmt.Sprintf("%q must not contain \"..\": it names one folder under the output folder", name)
	case strings.IndexFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return fmt.Sprintf("%q must not contain control characters", name)
	}
	return ""
}

type (
	addFunc      func(path, format string, args ...any)
	oneOfFunc    func(path, v string, allowed []string)
	positiveFunc func(path string, v float64)
	posIntFunc   func(path string, v int)
)

func (c *Config) validateParticipation(add addFunc, oneOf oneOfFunc, positive positiveFunc, positiveInt posIntFunc) {
	p := &c.Participation
	kinds := make([]string, len(participation.Kinds))
	for i, k := range participation.Kinds {
		kinds[i] = string(k)
	}
	oneOf("participation.kind", string(p.Kind), kinds)
	pt := p.Kind.Pattern()
	switch {
	case pt.Sampled():
		if pt.RandomGroups { // balls-in-bins: whole bins take their turns
			if p.Q != 0 {
				add("participation.q", "balls-in-bins has no q: every client of a bin takes part in each of its turns")
			}
		} else if !(p.Q > 0 && p.Q <= 1) {
			add("participation.q", "%v must be in (0, 1] (the inclusion probability)", p.Q)
		}
		if p.Cohort != 0 {
			add("participation.cohort", "poisson sampling has no fixed cohort: its denominator is q × data.clients (remove cohort)")
		}
		if !everyoneAvailable(p.Availability) {
			add("participation.availability.kind", "poisson sampling amplifies privacy only when every client is always available; selection driven by availability is not sampling")
		}
	default:
		positiveInt("participation.cohort", p.Cohort)
		if n := addCounts(c.Data.Clients, max(0, c.Audit.Canaries)); p.Cohort > 0 && c.Data.Clients > 0 && p.Cohort > n {
			if c.Audit.Canaries > 0 {
				add("participation.cohort", "%d clients per round cannot be drawn from data.clients = %d and audit.canaries = %d", p.Cohort, c.Data.Clients, c.Audit.Canaries)
			} else {
				add("participation.cohort", "%d clients per round cannot be drawn from data.clients = %d", p.Cohort, c.Data.Clients)
			}
		}
		if p.Q != 0 {
			add("participation.q", "only poisson and kb-poisson use q")
		}
	}
	switch {
	case pt.Separation() > 0 && !pt.Sampled():
		positiveInt("participation.k", p.K)
		positiveInt("participation.b", p.B)
	case pt.SampledTurns():
		positiveInt("participation.b", p.B)
		if p.K != 0 {
			add("participation.k", "kb-poisson has no k: a client has one chance per turn of its group, ⌈rounds/b⌉ in all")
		}
	default:
		if p.K != 0 || p.B != 0 {
			add("participation.k", "only kb and minsep use k and b")
		}
	}
	if p.MaxWaits < 0 || p.MaxWaits > participation.MaxWaits {
		add("participation.max_waits", "%d must be in [0, %d] (clock steps a round may wait for eligible clients)", p.MaxWaits, participation.MaxWaits)
	}
	positive("participation.clock.round_minutes", p.Clock.RoundMinutes)
	positive("participation.clock.wait_minutes", p.Clock.WaitMinutes)
	for _, m := range []struct {
		key string
		v   float64
	}{{"round_minutes", p.Clock.RoundMinutes}, {"wait_minutes", p.Clock.WaitMinutes}} {
		// The clock counts simulated seconds over every round.
		if secs := 60 * m.v * float64(max(1, c.Rounds)); m.v > 0 && math.IsInf(secs, 0) {
			add("participation.clock."+m.key, "%v is too long: %d rounds of it overflow the clock's seconds", m.v, c.Rounds)
		}
	}
	if h := p.Clock.StartHour; h < 0 || h >= 24 {
		add("participation.clock.start_hour", "%v must be in [0, 24)", h)
	}
	a := &p.Availability
	oneOf("participation.availability.kind", a.Kind, Availabilities)
	k, ok := lookupAvailability(a.Kind)
	if ok && k.Validate != nil {
		k.Validate(a, func(key, format string, args ...any) {
			add(strings.TrimSuffix("participation.availability."+key, "."), format, args...)
		})
	}
	if !readsFile(*a) && a.File != "" {
		add("participation.availability.file", "only availability kind %s reads a file", strings.Join(availabilityTable.Names(func(k AvailabilityKind) bool { return k.ReadsFile }), " or "))
	}
}

func (c *Config) validateSchedule(add addFunc) {
	c.Server.CheckSchedule(c.Rounds, func(key, format string, args ...any) { add("server."+key, format, args...) })
}

// NormalizeSchedule fills the defaults of the learning-rate schedule's
// keys: lr_schedule constant, and a final fraction of 0.05 after a
// cooldown.
func (sv *ServerConfig) NormalizeSchedule() {
	if sv.LRSchedule == "" {
		sv.LRSchedule = "constant"
	}
	if sv.CooldownRounds > 0 && sv.FinalLRFraction == nil {
		f := 0.05
		sv.FinalLRFraction = &f
	}
}

// CheckSchedule reports the problems of the (normalized) learning-rate
// schedule's keys (lr_schedule, warmup_rounds, cooldown_rounds,
// final_lr_fraction) for a run of the given rounds, keys relative to the
// server section: the one validation of these keys, for a run's
// configuration and for dpfl mechanism's flags.
func (sv *ServerConfig) CheckSchedule(rounds int, add registry.Problems) {
	registry.OneOf(add, "lr_schedule", sv.LRSchedule, LRSchedules)
	if sv.LRSchedule == "constant" {
		if sv.WarmupRounds != 0 {
			add("warmup_rounds", "only lr_schedule linear or cosine has a warmup")
		}
		if sv.CooldownRounds != 0 {
			add("cooldown_rounds", "only lr_schedule linear or cosine has a cooldown")
		}
	} else if slices.Contains(LRSchedules, sv.LRSchedule) {
		switch {
		case sv.WarmupRounds < 0:
			add("warmup_rounds", "%d must not be negative", sv.WarmupRounds)
		case sv.CooldownRounds < 0:
			add("cooldown_rounds", "%d must not be negative", sv.CooldownRounds)
		case sv.WarmupRounds == 0 && sv.CooldownRounds == 0:
			add("lr_schedule", "%s needs warmup_rounds or cooldown_rounds (or use constant)", sv.LRSchedule)
		case rounds > 0 && (sv.WarmupRounds > rounds || sv.CooldownRounds > rounds-sv.WarmupRounds):
			add("cooldown_rounds", "warmup_rounds %d + cooldown_rounds %d exceed rounds = %d", sv.WarmupRounds, sv.CooldownRounds, rounds)
		}
	}
	if f := sv.FinalLRFraction; f != nil {
		if sv.CooldownRounds <= 0 {
			add("final_lr_fraction", "only a cooldown (cooldown_rounds > 0) has a final fraction")
		} else if !(*f >= 0 && *f <= 1) {
			add("final_lr_fraction", "%v must be in [0, 1]", *f)
		}
	}
}

func (c *Config) validateData(add addFunc, src *Source) {
	c.Data.Validate(func(key, format string, args ...any) { add("data."+key, format, args...) },
		func(key string) bool { return src.Line("data."+key) != 0 })
}

func (c *Config) validateModel(add addFunc, oneOf oneOfFunc) {
	m := &c.Model
	oneOf("model.kind", m.Kind, models.KindNames(nil))
	m.Validate(func(key, format string, args ...any) { add("model."+key, format, args...) })
	if len(m.Freeze) > 0 && c.Audit.Canaries > 0 {
		add("model.freeze", "not with an audit (audit.canaries): the canaries' updates span the whole model")
	}
	// Model and data must fit: images for the classifiers, text for the
	// next-word models.
	k := models.LookupKind(m.Kind)
	text, images := true, false
	switch {
	case k == nil, c.Data.DataTells(): // the data is checked once read
	case m.Text() && !c.Data.Text():
		add("model.kind", "%s predicts the next word of text: it needs dataset %s, not %s (use %s)",
			m.Kind, commaOr(textDatasets()), c.Data.Dataset, commaOr(models.KindNames(&images)))
	case !m.Text() && c.Data.Text():
		add("model.kind", "%s classifies images, but dataset %s is next-word text: use %s", m.Kind, c.Data.Dataset, commaOr(models.KindNames(&text)))
	}
}

// textDatasets lists the next-word text datasets.
func textDatasets() []string {
	text := true
	return datasets.KindNames(&text)
}

// commaOr joins a list as "a, b or c".
func commaOr(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// validateOptimizer checks the keys of the server optimizer (its own
// validation), and that a factorization is optimized for its trajectory
// only when that trajectory is linear in the updates.
func (c *Config) validateOptimizer(add addFunc) {
	sv := &c.Server
	k, ok := aggregators.LookupServerOptimizer(sv.Optimizer)
	if !ok {
		return // reported by Validate
	}
	k.Check(sv.params(), func(key, format string, args ...any) { add("server."+key, format, args...) })
	if !k.Linear && c.Aggregator.Workload == "server" {
		add("aggregator.workload", "server optimizes the factorization for SGD with momentum, whose trajectory is linear in the updates; %s is not (use workload prefix)", sv.Optimizer)
	}
}

// params are the keys of the server section the optimizers read.
func (sv *ServerConfig) params() aggregators.ServerParams {
	return aggregators.ServerParams{LR: sv.LR, Momentum: sv.Momentum, Beta1: sv.Beta1, Beta2: sv.Beta2, Tau: sv.Tau}
}

// setParams sets the keys of p.
func (sv *ServerConfig) setParams(p aggregators.ServerParams) {
	sv.LR, sv.Momentum, sv.Beta1, sv.Beta2, sv.Tau = p.LR, p.Momentum, p.Beta1, p.Beta2, p.Tau
}

// AGD reports whether the run trains with DP-AGD (aggregator.kind dp-agd).
func (c *Config) AGD() bool { return c.Aggregator.Kind == "dp-agd" }

// validateAGD checks what DP-AGD needs besides its own keys: a target ε
// (its budget), a zCDP accountant, and no server optimizer (it chooses its
// own steps).
func (c *Config) validateAGD(add addFunc) {
	if c.Privacy.Epsilon == nil && c.Aggregator.NoiseMultiplier == nil {
		return // privacy.epsilon is reported required below
	}
	if _, ok := newAccountant(c.Privacy.Accountant).(privacy.ZCDPBudgeter); !ok {
		add("privacy.accountant", "dp-agd spends a zCDP budget: use zcdp-cks (the default, the tight conversion) or zcdp")
	}
	if c.Privacy.PopulationScale != 0 {
		add("privacy.population_scale", "not with dp-agd")
	}
	sv := c.Server
	for _, k := range []struct {
		key string
		set bool
	}{
		{"server.lr", sv.LR != 0}, {"server.momentum", sv.Momentum != 0}, {"server.optimizer", sv.Optimizer != aggregators.DefaultServerOptimizer},
		{"server.lr_schedule", sv.LRSchedule != "constant"}, {"server.beta1", sv.Beta1 != nil}, {"server.tau", sv.Tau != 0},
	} {
		if k.set {
			add(k.key, "dp-agd chooses its own steps by noisy max (aggregator.max_step): remove it")
		}
	}
}

// sampledGaussian stands for the events of the sampled participation
// schemes when validating the accountant: a Poisson-sampled Gaussian (any
// q in (0, 1) stands for all of them).
var sampledGaussian = privacy.PoissonSampled{Probability: 0.5, Event: privacy.Gaussian{NoiseMultiplier: 1}}

// newAccountant returns an empty accountant called name, to ask what it
// supports, or nil for an unknown name (reported by Validate).
func newAccountant(name string) privacy.Accountant {
	newAcct, err := privacy.NewByName(name, nil)
	if err != nil {
		return nil
	}
	return newAcct()
}

// deltaBound says how small a delta the population asks for: below one over
// the population, computed from data.clients or, when the data determines
// the population and l names a loader, by counting it in the data.
func (c *Config) deltaBound(l Limits, src *Source) string {
	n := 0
	switch {
	case c.Data.Clients > 0:
		n = c.Data.Clients
	case c.Data.FromData() && l.Data != nil:
		dir := ""
		if src != nil && src.File != "" {
			dir = filepath.Dir(src.File)
		}
		key := fmt.Sprintf("%s|%+v|%d", dir, c.Data, c.Seed)
		if m, ok := l.populations[key]; ok {
			n = m
		} else {
			if m, err := population(context.Background(), c, Options{BaseDir: dir, Data: l.Data}, rng.New(c.Seed)); err == nil {
				n = m
			}
			if l.populations != nil {
				l.populations[key] = n
			}
		}
	}
	if n > 0 && c.Audit.Canaries > 0 && n <= math.MaxInt-c.Audit.Canaries {
		n += c.Audit.Canaries
	}
	if n <= 0 {
		return "below 1/population, one over the number of clients the data holds"
	}
	return fmt.Sprintf("below 1/%d = %.2g", n, 1/float64(n))
}

// addCounts is a + b for counts a, b >= 0, saturated at math.MaxInt instead
// of overflowing.
func addCounts(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// largeDelta says why delta is refused for a population of n clients.
func largeDelta(delta float64, n int) string {
	return fmt.Sprintf("%g is not below 1/population = 1/%d: a delta that large allows publishing some client's data outright; lower it (e.g. %.0e), or set privacy.allow_large_delta: true to accept it",
		delta, n, math.Pow(10, math.Floor(math.Log10(1/float64(n)))-1))
}
