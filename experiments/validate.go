package experiments

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"dpfl/privacy"
)

// Known values of the configuration's kind fields.
var (
	Datasets       = []string{"mnist"}
	Partitions     = []string{"iid", "dirichlet"}
	ModelKinds     = []string{"logreg", "mlp"}
	Participations = []string{"uniform", "single", "kb", "minsep", "poisson", "kb-poisson"}
	Availabilities = []string{"always", "diurnal", "trace"}
	Aggregators    = []string{"dpfedavg", "tree", "optimal-mf", "bandmf", "nu-ftrl"}
	Estimators     = []string{"vanilla", "online", "full"}
	Optimizers     = []string{"sgd"}
	LRSchedules    = []string{"constant", "linear", "cosine"}
	Workloads      = []string{"prefix", "server"}
)

// Normalize fills in the defaults of unset optional fields.
func (c *Config) Normalize() {
	if c.Name == "" {
		c.Name = "run"
	}
	if c.Data.Partition == "" {
		c.Data.Partition = "iid"
	}
	if c.Data.Partition == "dirichlet" && c.Data.Alpha == 0 {
		c.Data.Alpha = 0.5
	}
	if c.Model.Kind == "mlp" && len(c.Model.Hidden) == 0 {
		c.Model.Hidden = []int{200}
	}
	if c.Client.Epochs == 0 {
		c.Client.Epochs = 1
	}
	if c.Client.BatchSize == 0 {
		c.Client.BatchSize = 10
	}
	pc := &c.Participation
	if pc.Kind == "" {
		pc.Kind = "uniform"
	}
	if pc.Availability.Kind == "" {
		pc.Availability.Kind = "always"
	}
	if pc.Clock.RoundMinutes == 0 {
		pc.Clock.RoundMinutes = 10
	}
	if pc.Clock.WaitMinutes == 0 {
		pc.Clock.WaitMinutes = pc.Clock.RoundMinutes
	}
	if a := &pc.Availability; a.Kind == "diurnal" {
		if a.Peak == 0 && a.Trough == 0 {
			a.Peak, a.Trough = 0.8, 0.05
		}
		if a.WindowHours == 0 {
			a.WindowHours = 4
		}
	}
	ag := &c.Aggregator
	if ag.Kind == "" {
		ag.Kind = "dpfedavg"
	}
	if ag.Kind == "tree" && ag.Estimator == "" {
		ag.Estimator = "online"
	}
	if ag.Kind == "tree" && ag.Restart == "" {
		ag.Restart = "none"
	}
	if ag.Kind != "dpfedavg" && ag.Memory == "" {
		ag.Memory = "store"
	}
	if ag.Kind != "dpfedavg" && ag.MemoryBudgetMB == 0 {
		ag.MemoryBudgetMB = 4096
	}
	if c.Privacy.Accountant == "" {
		c.Privacy.Accountant = "exact"
		if pc.sampled() {
			c.Privacy.Accountant = "rdp"
		}
	}
	if c.Server.Optimizer == "" {
		c.Server.Optimizer = "sgd"
	}
	sv := &c.Server
	if sv.LRSchedule == "" {
		sv.LRSchedule = "constant"
	}
	if sv.CooldownRounds > 0 && sv.FinalLRFraction == nil {
		f := 0.05
		sv.FinalLRFraction = &f
	}
	if (ag.Kind == "optimal-mf" || ag.Kind == "bandmf") && ag.Workload == "" {
		ag.Workload = "prefix"
	}
	if c.Eval.Every == 0 && c.Rounds > 0 {
		c.Eval.Every = max(1, c.Rounds/20)
	}
	if c.Eval.Batch == 0 {
		c.Eval.Batch = 500
	}
}

// Private reports whether the run adds noise.
func (c *Config) Private() bool {
	return c.Privacy.Epsilon != nil || (c.Aggregator.NoiseMultiplier != nil && *c.Aggregator.NoiseMultiplier > 0)
}

// Validate reports every problem with the (normalized) configuration at once,
// each naming its key and, through src, its line.
func (c *Config) Validate(src *Source) error {
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

	positiveInt("rounds", c.Rounds)
	oneOf("data.dataset", c.Data.Dataset, Datasets)
	oneOf("data.partition", c.Data.Partition, Partitions)
	positiveInt("data.clients", c.Data.Clients)
	if c.Data.Partition == "dirichlet" {
		positive("data.alpha", c.Data.Alpha)
	}
	oneOf("model.kind", c.Model.Kind, ModelKinds)
	if c.Model.Kind == "logreg" && len(c.Model.Hidden) > 0 {
		add("model.hidden", "logreg has no hidden layers (use kind: mlp)")
	}
	for i, h := range c.Model.Hidden {
		if h <= 0 {
			add(fmt.Sprintf("model.hidden[%d]", i), "width %d must be positive", h)
		}
	}
	positiveInt("client.epochs", c.Client.Epochs)
	positiveInt("client.batch_size", c.Client.BatchSize)
	positive("client.lr", c.Client.LR)
	if c.Client.MaxExamples < 0 {
		add("client.max_examples", "%d must not be negative (0 uses every example)", c.Client.MaxExamples)
	}
	c.validateParticipation(add, oneOf, positive, positiveInt)
	oneOf("aggregator.kind", c.Aggregator.Kind, Aggregators)
	c.validateAggregator(add, oneOf)
	positive("aggregator.clip", c.Aggregator.Clip)

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
			add("privacy.delta", "required for a private run (a probability in (0, 1), below 1/data.clients)")
		} else if !(c.Privacy.Delta > 0 && c.Privacy.Delta < 1) {
			add("privacy.delta", "%v must be in (0, 1)", c.Privacy.Delta)
		}
	}
	oneOf("privacy.accountant", c.Privacy.Accountant, privacy.AccountantNames)
	if c.Participation.sampled() && (c.Privacy.Accountant == "exact" || strings.HasPrefix(c.Privacy.Accountant, "zcdp")) {
		add("privacy.accountant", "%s cannot account Poisson sampling (use rdp or pld)", c.Privacy.Accountant)
	}
	oneOf("server.optimizer", c.Server.Optimizer, Optimizers)
	positive("server.lr", c.Server.LR)
	if c.Server.Momentum < 0 || c.Server.Momentum >= 1 {
		add("server.momentum", "%v must be in [0, 1)", c.Server.Momentum)
	}
	c.validateSchedule(add, oneOf)
	positiveInt("eval.every", c.Eval.Every)
	positiveInt("eval.batch", c.Eval.Batch)
	return errors.Join(errs...)
}

type (
	addFunc      func(path, format string, args ...any)
	oneOfFunc    func(path, v string, allowed []string)
	positiveFunc func(path string, v float64)
	posIntFunc   func(path string, v int)
)

func (c *Config) validateParticipation(add addFunc, oneOf oneOfFunc, positive positiveFunc, positiveInt posIntFunc) {
	p := &c.Participation
	oneOf("participation.kind", p.Kind, Participations)
	switch p.Kind {
	case "poisson", "kb-poisson":
		if !(p.Q > 0 && p.Q <= 1) {
			add("participation.q", "%v must be in (0, 1] (the inclusion probability)", p.Q)
		}
		if p.Cohort != 0 {
			add("participation.cohort", "poisson sampling has no fixed cohort: its denominator is q × data.clients (remove cohort)")
		}
		if p.Availability.Kind != "always" {
			add("participation.availability.kind", "poisson sampling amplifies privacy only when every client is always available; selection driven by availability is not sampling")
		}
	default:
		positiveInt("participation.cohort", p.Cohort)
		if p.Cohort > 0 && c.Data.Clients > 0 && p.Cohort > c.Data.Clients {
			add("participation.cohort", "%d clients per round cannot be drawn from data.clients = %d", p.Cohort, c.Data.Clients)
		}
		if p.Q != 0 {
			add("participation.q", "only poisson and kb-poisson use q")
		}
	}
	switch p.Kind {
	case "kb", "minsep":
		positiveInt("participation.k", p.K)
		positiveInt("participation.b", p.B)
	case "kb-poisson":
		positiveInt("participation.b", p.B)
		if p.K != 0 {
			add("participation.k", "kb-poisson has no k: a client has one chance per turn of its group, ⌈rounds/b⌉ in all")
		}
	default:
		if p.K != 0 || p.B != 0 {
			add("participation.k", "only kb and minsep use k and b")
		}
	}
	if p.MaxWaits < 0 {
		add("participation.max_waits", "%d must not be negative", p.MaxWaits)
	}
	positive("participation.clock.round_minutes", p.Clock.RoundMinutes)
	positive("participation.clock.wait_minutes", p.Clock.WaitMinutes)
	if h := p.Clock.StartHour; h < 0 || h >= 24 {
		add("participation.clock.start_hour", "%v must be in [0, 24)", h)
	}
	a := &p.Availability
	oneOf("participation.availability.kind", a.Kind, Availabilities)
	switch a.Kind {
	case "diurnal":
		spec := a.diurnalSpec()
		if err := spec.Validate(); err != nil {
			add("participation.availability", "%s", strings.TrimPrefix(err.Error(), "participation: "))
		}
	case "trace":
		if a.File == "" {
			add("participation.availability.file", "required for a trace (a CSV of client,start,end in simulated seconds)")
		}
	}
	if a.Kind != "trace" && a.File != "" {
		add("participation.availability.file", "only availability kind trace reads a file")
	}
}

func (c *Config) validateAggregator(add addFunc, oneOf oneOfFunc) {
	ag := &c.Aggregator
	only := func(path string, set bool, kind string) {
		if set && ag.Kind != kind {
			add(path, "only aggregator kind %s uses it", kind)
		}
	}
	only("aggregator.estimator", ag.Estimator != "", "tree")
	only("aggregator.multi_epoch", ag.MultiEpoch, "optimal-mf")
	only("aggregator.bands", ag.Bands != 0, "bandmf")
	only("aggregator.nu", ag.Nu != nil, "nu-ftrl")
	only("aggregator.nu_coefficients", ag.NuCoefficients != 0, "nu-ftrl")
	if ag.NuCoefficients < 0 || (c.Rounds > 0 && ag.NuCoefficients > c.Rounds) {
		add("aggregator.nu_coefficients", "%d must be in [1, rounds] (0: all)", ag.NuCoefficients)
	}
	if ag.Workload != "" {
		if ag.Kind != "optimal-mf" && ag.Kind != "bandmf" {
			add("aggregator.workload", "only aggregator kinds optimal-mf and bandmf are optimized for a workload")
		} else {
			oneOf("aggregator.workload", ag.Workload, Workloads)
		}
	}
	only("aggregator.restart", ag.Restart != "", "tree")
	only("aggregator.restart_every", ag.RestartEvery != 0, "tree")
	if ag.Kind == "tree" {
		oneOf("aggregator.estimator", ag.Estimator, Estimators)
		oneOf("aggregator.restart", ag.Restart, []string{"none", "epoch"})
		switch {
		case ag.RestartEvery < 0:
			add("aggregator.restart_every", "%d must not be negative (0: no restarts)", ag.RestartEvery)
		case ag.RestartEvery > 0 && ag.Restart == "epoch":
			add("aggregator.restart_every", "set either restart: epoch or restart_every, not both")
		case ag.Restart == "epoch" && c.Participation.Kind != "kb" && c.Participation.Kind != "minsep":
			add("aggregator.restart", "epoch needs participation kind kb or minsep (its b is the epoch)")
		}
	}
	if ag.Nu != nil && !(*ag.Nu >= 0 && *ag.Nu < 1) {
		add("aggregator.nu", "%v must be in [0, 1)", *ag.Nu)
	}
	if ag.Bands < 0 || (c.Rounds > 0 && ag.Bands > c.Rounds) {
		add("aggregator.bands", "%d must be in [1, rounds]", ag.Bands)
	}
	if ag.Kind == "dpfedavg" {
		if ag.Memory != "" {
			add("aggregator.memory", "dpfedavg keeps no past noise")
		}
	} else {
		oneOf("aggregator.memory", ag.Memory, []string{"store", "regenerate"})
		if !(ag.MemoryBudgetMB > 0) {
			add("aggregator.memory_budget_mb", "%v must be positive", ag.MemoryBudgetMB)
		}
		if c.Participation.Kind == "poisson" {
			add("aggregator.kind", "%s with poisson sampling is not supported (amplified correlated noise needs the BandMF sampling scheme, participation kind kb-poisson); use dpfedavg or another schema", ag.Kind)
		}
		if c.Participation.Kind == "kb-poisson" {
			if ag.Kind != "bandmf" {
				add("aggregator.kind", "%s with kb-poisson sampling is not supported (amplification needs a banded C with at most participation.b bands: bandmf or dpfedavg)", ag.Kind)
			} else if ag.Bands > c.Participation.B {
				add("aggregator.bands", "%d bands exceed participation.b = %d: kb-poisson amplification needs bands <= b", ag.Bands, c.Participation.B)
			}
		}
		if ag.MultiEpoch && c.Participation.Kind != "kb" && c.Participation.Kind != "minsep" {
			add("aggregator.multi_epoch", "needs participation kind kb or minsep (its b)")
		}
		if ag.Kind == "bandmf" && ag.Bands == 0 && c.Participation.Kind != "kb" && c.Participation.Kind != "minsep" && c.Participation.Kind != "kb-poisson" {
			add("aggregator.bands", "required unless participation is kb, minsep or kb-poisson (whose b is the default)")
		}
	}
}

func (c *Config) validateSchedule(add addFunc, oneOf oneOfFunc) {
	sv := &c.Server
	oneOf("server.lr_schedule", sv.LRSchedule, LRSchedules)
	if sv.LRSchedule == "constant" {
		if sv.WarmupRounds != 0 {
			add("server.warmup_rounds", "only lr_schedule linear or cosine has a warmup")
		}
		if sv.CooldownRounds != 0 {
			add("server.cooldown_rounds", "only lr_schedule linear or cosine has a cooldown")
		}
	} else if slices.Contains(LRSchedules, sv.LRSchedule) {
		switch {
		case sv.WarmupRounds < 0:
			add("server.warmup_rounds", "%d must not be negative", sv.WarmupRounds)
		case sv.CooldownRounds < 0:
			add("server.cooldown_rounds", "%d must not be negative", sv.CooldownRounds)
		case sv.WarmupRounds == 0 && sv.CooldownRounds == 0:
			add("server.lr_schedule", "%s needs warmup_rounds or cooldown_rounds (or use constant)", sv.LRSchedule)
		case c.Rounds > 0 && sv.WarmupRounds+sv.CooldownRounds > c.Rounds:
			add("server.cooldown_rounds", "warmup_rounds %d + cooldown_rounds %d exceed rounds = %d", sv.WarmupRounds, sv.CooldownRounds, c.Rounds)
		}
	}
	if f := sv.FinalLRFraction; f != nil {
		if sv.CooldownRounds <= 0 {
			add("server.final_lr_fraction", "only a cooldown (cooldown_rounds > 0) has a final fraction")
		} else if !(*f >= 0 && *f <= 1) {
			add("server.final_lr_fraction", "%v must be in [0, 1]", *f)
		}
	}
}

// sampled reports whether clients are sampled independently (poisson,
// kb-poisson): no fixed cohort, amplified accounting.
func (p ParticipationConfig) sampled() bool { return p.Kind == "poisson" || p.Kind == "kb-poisson" }
