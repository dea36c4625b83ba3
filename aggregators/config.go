package aggregators

import (
	"math"
	"strings"

	"dpfl/aggregators/strategy"
	"dpfl/participation"
	"dpfl/sim/registry"
)

// Config is the aggregator section of a run configuration (YAML key
// aggregator): the kind, the clip norm, the noise, and each kind's own
// parameters. Each kind's parameters are a struct of their own, inlined here
// (TreeConfig, OptimalConfig, BandMFConfig, NuConfig), with their defaults
// and validation next to their entry in Kinds; a parameter set for another
// kind is an error.
//
// The order of the fields is the order of the keys in a run's config.yaml
// and in the hash of its run ID: a new kind's struct goes at the end, and a
// new key must be zero by default (zero keys are left out of the hash).
type Config struct {
	// Kind: dpfedavg (independent noise), tree (tree-aggregation DP-FTRL),
	// optimal-mf (optimal dense matrix factorization), bandmf (banded MF),
	// nu-ftrl (ν-DP-FTRL) or blt (buffered linear Toeplitz); see Kinds. A mechanism name of Names (e.g.
	// tree-full, multi-epoch) or an old spelling (identity, optimal, nu) is
	// accepted and normalized to its kind and parameters. Correlated-noise
	// kinds are optimized for the run's rounds; their privacy is the
	// strategy's sensitivity for the realized participation and sigma alone
	// (the decoder is the server optimizer, post-processing).
	Kind string  `yaml:"kind"`
	Clip float64 `yaml:"clip"` // L2 bound on each client's delta

	TreeConfig    `yaml:",inline"`
	OptimalConfig `yaml:",inline"`
	BandMFConfig  `yaml:",inline"`
	NuConfig      `yaml:",inline"`
	AGDConfig     `yaml:",inline"`

	// Memory (correlated noise): store (keep past latent noise vectors) or
	// regenerate (O(d) memory: redraw each from its seed); results are
	// identical. MemoryBudgetMB refuses a store mode that would exceed it.
	Memory         string  `yaml:"memory"`
	MemoryBudgetMB float64 `yaml:"memory_budget_mb"`
	// Cache is the folder of optimized strategies (default: the user cache
	// folder + /dpfl/strategies).
	Cache string `yaml:"cache"`
	// Workload (optimal-mf, bandmf) is the linear map the factorization is
	// optimized for: prefix (the default: prefix sums, i.e. constant-LR SGD
	// without momentum) or server (the server optimizer's own trajectory,
	// A = S·diag(η)·M_β with server.momentum β and the server.lr_schedule
	// factors η; Denisov et al. 2022 §4: optimal-mf is then optimal for
	// that optimizer). Privacy does not depend on it. With momentum or a
	// schedule, optimal-mf uses the dense eigensolver: O(rounds³) per
	// iteration, minutes above ~1000 rounds.
	Workload string `yaml:"workload"`
	// NoiseMultiplier is sigma relative to sensitivity 1: the noise std on the
	// sum is sigma · clip · sensitivity. Set it, or privacy.epsilon, not both;
	// 0 trains without privacy.
	NoiseMultiplier *float64 `yaml:"noise_multiplier"`
	// ClipQuantile γ in (0, 1) turns on quantile-based adaptive clipping
	// (Andrew et al. 2021; AdaptiveClip): the clip norm starts at Clip and
	// follows the γ-quantile of the clients' update norms, estimated each
	// round from a noised count of unclipped clients. Default 0: the clip
	// norm is fixed. Not with kb-poisson sampling.
	ClipQuantile float64 `yaml:"clip_quantile"`
	// ClipLR is the geometric update's learning rate η_C (default 0.2, the
	// paper's, with clip_quantile).
	ClipLR float64 `yaml:"clip_lr"`
	// ClipCountStddev is σ_b, the std of the noise on the count of
	// unclipped clients (default 0: the expected cohort / 20, the paper's
	// setting, resolved when the run is planned). It is part of the privacy
	// event: with privacy.epsilon the update's noise multiplier is
	// calibrated so that the pair meets the target.
	ClipCountStddev float64 `yaml:"clip_count_stddev"`

	BLTConfig `yaml:",inline"`

	// Set by Normalize: the mechanism name Kind was given as, and how the
	// keys given with it contradict it.
	nameGiven, conflict string
}

// Run is what the aggregator section's defaults, validation and strategy
// depend on in the rest of a run configuration.
type Run struct {
	Rounds        int
	Participation participation.Schema // the declared schema
	// Momentum and LR are the server optimizer's momentum and learning-rate
	// schedule: the workload "server" the factorizations may be optimized
	// for.
	Momentum float64
	LR       LRSchedule
}

// Problems receives the problems of a configuration section, each with its
// key relative to the section (e.g. "estimator") and its reason.
type Problems = registry.Problems

// Known values of the common keys.
var (
	Workloads = []string{"prefix", "server"}
	Memories  = []string{"store", "regenerate"}
)

// Normalize fills the defaults of unset keys, and turns a mechanism name or
// old spelling in Kind into its kind and parameters (see Names). It
// reports a problem when Kind is a mechanism name whose parameters conflict
// with keys also given, or one only dpfl mechanism evaluates.
func (c *Config) Normalize() {
	if c.Kind == "" {
		c.Kind = "dpfedavg"
	}
	if n, ok := lookupName(c.Kind); ok && n.Kind != "" && n.Kind != c.Kind {
		c.nameGiven = c.Kind
		c.Kind = n.Kind
		if n.set != nil {
			n.set(c)
		}
	}
	k := Lookup(c.Kind)
	if k == nil {
		return
	}
	if k.normalize != nil {
		k.normalize(c)
	}
	if k.Correlated && c.Memory == "" {
		c.Memory = "store"
	}
	if k.Correlated && c.MemoryBudgetMB == 0 {
		c.MemoryBudgetMB = 4096
	}
	if k.Workload && c.Workload == "" {
		c.Workload = "prefix"
	}
	if c.ClipQuantile != 0 && c.ClipLR == 0 {
		c.ClipLR = 0.2
	}
}

// MinClipCountStddev is the smallest clip_count_stddev accepted: below it
// the count's privacy loss per release, 1/(2σ_b)², summed over the rounds,
// is not a finite float64.
const MinClipCountStddev = 1e-100

// Adaptive reports whether the clip norm is adaptive (clip_quantile set).
func (c *Config) Adaptive() bool { return c.ClipQuantile != 0 }

// validateAdaptive reports the problems of the adaptive-clipping keys.
func (c *Config) validateAdaptive(r Run, add Problems) {
	if !c.Adaptive() {
		if c.ClipLR != 0 {
			add("clip_lr", "only adaptive clipping (clip_quantile) uses it")
		}
		if c.ClipCountStddev != 0 {
			add("clip_count_stddev", "only adaptive clipping (clip_quantile) uses it")
		}
		return
	}
	if q := c.ClipQuantile; !(q > 0 && q < 1) {
		add("clip_quantile", "%v must be in (0, 1) (the target quantile of the update norms; 0: fixed clip)", q)
	}
	if !(c.ClipLR > 0) || math.IsInf(c.ClipLR, 0) {
		add("clip_lr", "%v must be a positive finite number", c.ClipLR)
	}
	switch s := c.ClipCountStddev; {
	case !(s >= 0) || math.IsInf(s, 0):
		add("clip_count_stddev", "%v must be a finite number >= 0 (0: the expected cohort / 20)", s)
	case s > 0 && s < MinClipCountStddev:
		add("clip_count_stddev", "%v is below %g: the count's privacy loss, 1/(2·clip_count_stddev)² per release, overflows (0: the expected cohort / 20)", s, MinClipCountStddev)
	}
	if r.Participation.Kind.Pattern().SampledTurns() {
		add("clip_quantile", "adaptive clipping with kb-poisson sampling is not supported: BandMF's amplification (Choquette-Choo et al. 2023 §5) is proved for the update alone, not for the update and the clip count together (use participation kind poisson with dpfedavg, or an unsampled schema)")
	}
}

// Validate reports every problem with the (normalized) section through add.
func (c *Config) Validate(r Run, add Problems) {
	k := Lookup(c.Kind)
	switch {
	case c.Kind == "":
		add("kind", "required (one of %v)", KindNames())
	case k == nil:
		if n, ok := lookupName(c.Kind); ok && n.Kind == "" {
			add("kind", "%s is a mechanism dpfl mechanism compares, not a kind a run can use (want one of %v)", c.Kind, KindNames())
		} else {
			add("kind", "unknown value %q (want one of %v)", c.Kind, KindNames())
		}
	}
	if c.conflict != "" {
		add("kind", "%s", c.conflict)
	}
	c.validateAdaptive(r, add)
	// A kind's own keys belong to it alone.
	for i := range Kinds {
		o := &Kinds[i]
		if o == k || o.params == nil {
			continue
		}
		for _, key := range registry.SetKeys(o.params(c)) {
			add(key, "only aggregator kind %s uses it", o.Name)
		}
	}
	if c.Workload != "" {
		if k != nil && !k.Workload {
			add("workload", "only aggregator kinds %s are optimized for a workload", strings.Join(workloadKinds(), " and "))
		} else if k != nil {
			registry.OneOf(add, "workload", c.Workload, Workloads)
		}
	}
	if k == nil {
		return
	}
	if k.validate != nil {
		k.validate(c, r, add)
	}
	if !k.Correlated {
		if c.Memory != "" {
			add("memory", "%s keeps no past noise", k.Name)
		}
		return
	}
	registry.OneOf(add, "memory", c.Memory, Memories)
	if !(c.MemoryBudgetMB > 0) {
		add("memory_budget_mb", "%v must be positive", c.MemoryBudgetMB)
	}
	switch pt := r.Participation.Kind.Pattern(); {
	case pt.Sampled() && pt.Groups == 0:
		add("kind", "%s with poisson sampling is not supported (amplified correlated noise needs the BandMF sampling scheme, participation kind kb-poisson); use dpfedavg or another schema", c.Kind)
	case pt.SampledTurns():
		if !k.KBPoisson {
			add("kind", "%s with kb-poisson sampling is not supported (amplification needs a banded C with at most participation.b bands: %s)", c.Kind, strings.Join(kbPoissonKinds(), " or "))
		}
	}
}

// Mode is the configured memory mode of correlated noise.
func (c *Config) Mode() Mode {
	if c.Memory == "regenerate" {
		return Regenerate
	}
	return Store
}

// StrategyName is the name strategy.Build knows the configured strategy by.
func (c *Config) StrategyName() string {
	if k := Lookup(c.Kind); k != nil {
		return k.strategyName(c)
	}
	return ""
}

// StrategyConfig is what strategy.Build needs, besides the name, to build the
// configured strategy for the run r whose realized participation is
// contained in part (see ContainingPattern), with the optimized strategies
// cached in cache (nil: none).
func (c *Config) StrategyConfig(r Run, part participation.Pattern, cache *strategy.Cache) strategy.Config {
	w := strategy.Prefix(r.Rounds)
	if c.Workload == "server" {
		w = strategy.Momentum(r.Rounds, r.Momentum, r.LR.Factors())
	}
	sc := strategy.Config{Workload: w, Participation: part, Nu: -1, Cache: cache}
	if k := Lookup(c.Kind); k != nil && k.configure != nil {
		k.configure(c, r, &sc)
	}
	return sc
}

// NoiseVectors estimates how many noise vectors of the model's dimension the
// store mode keeps between rounds at its peak, for the memory estimate of a
// run of the given rounds (bands: the band count the strategy will have).
func (c *Config) NoiseVectors(rounds, bands int) float64 {
	if k := Lookup(c.Kind); k != nil && k.noiseVectors != nil {
		return k.noiseVectors(c, rounds, bands)
	}
	return float64(rounds) + denseOutputs(rounds)
}

// denseOutputs is the estimate's allowance for the outputs a store-mode
// source with every latent in use holds: a batch of rounds once its rows
// are long enough to be batched (Linear).
func denseOutputs(rounds int) float64 {
	if rounds < linearDense {
		return 0
	}
	return float64(min(linearBatch, rounds))
}

// inRange adds a problem unless 1 ≤ v ≤ rounds (v = 0 means unset).
func inRange(add Problems, key string, v, rounds int, zero string) {
	if v < 0 || (rounds > 0 && v > rounds) {
		add(key, "%d must be in [1, rounds]%s", v, zero)
	}
}

func workloadKinds() []string  { return kinds.Names(func(k Kind) bool { return k.Workload }) }
func kbPoissonKinds() []string { return kinds.Names(func(k Kind) bool { return k.KBPoisson }) }
