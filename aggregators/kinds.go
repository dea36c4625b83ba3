package aggregators

import (
	"math"

	"dpfl/aggregators/strategy"
	"dpfl/participation"
	"dpfl/sim/registry"
)

// Kind is one aggregator kind: its name (aggregator.kind in YAML, the
// aggregator column of the output tables), its own parameters with their
// defaults and validation, and how its strategy is built. Kinds is the one
// table experiments, dpfl mechanism and the docs read.
type Kind struct {
	Name string
	Doc  string // one line, for help texts and docs
	// Correlated: the noise is correlated across rounds (the memory,
	// memory_budget_mb and cache keys apply).
	Correlated bool
	// Workload: the strategy is optimized for a workload (the workload key
	// applies).
	Workload bool
	// KBPoisson: amplified by kb-poisson sampling (a banded C with at most
	// participation.b bands).
	KBPoisson bool
	// Algorithm: the kind is a training algorithm with its own noise and
	// accounting (dp-agd), not a noise mechanism: dpfl mechanism does not
	// list it.
	Algorithm bool
	// Strategy is the strategy.Build name of a kind with one strategy
	// (unused when the kind's strategy function chooses it).
	Strategy string

	params       func(c *Config) any // the kind's own parameters (a struct pointer), nil: none
	normalize    func(c *Config)
	validate     func(c *Config, r Run, add Problems)
	strategy     func(c *Config) string // the strategy.Build name (nil: Strategy)
	configure    func(c *Config, r Run, sc *strategy.Config)
	noiseVectors func(c *Config, rounds, bands int) float64
}

// Kinds lists the aggregator kinds. To add one: its strategy in
// aggregators/strategy (a Strategy, built by strategy.Build under a new
// name, its own parameters in strategy.Config.Params), its entry here with
// its own parameter struct and validation (configure sets Params), and that
// struct inlined at the end of Config (config.go); see the package doc.
var Kinds = []Kind{
	{
		Name: "dpfedavg", Doc: "DP-FedAvg: independent Gaussian noise every round (C = I)", KBPoisson: true,
		strategy: func(*Config) string { return "identity" },
	},
	{
		Name: "tree", Doc: "tree-aggregation DP-FTRL (Kairouz et al. 2021), estimator vanilla, online or full, optionally restarted", Correlated: true,
		params:       func(c *Config) any { return &c.TreeConfig },
		normalize:    func(c *Config) { c.TreeConfig.normalize() },
		validate:     func(c *Config, r Run, add Problems) { c.TreeConfig.validate(r, add) },
		strategy:     func(c *Config) string { return treeStrategy[c.Estimator] },
		configure:    func(c *Config, r Run, sc *strategy.Config) { c.TreeConfig.configure(r, sc) },
		noiseVectors: func(c *Config, rounds, _ int) float64 { return c.TreeConfig.noiseVectors(rounds) },
	},
	{
		Name: "optimal-mf", Doc: "optimal dense matrix factorization (Denisov et al. 2022), or multi-epoch MF for (k,b)/min-sep (Choquette-Choo et al. 2023)", Correlated: true, Workload: true,
		params:    func(c *Config) any { return &c.OptimalConfig },
		validate:  func(c *Config, r Run, add Problems) { c.OptimalConfig.validate(r, add) },
		strategy:  func(c *Config) string { return c.OptimalConfig.strategy() },
		configure: func(c *Config, r Run, sc *strategy.Config) { c.OptimalConfig.configure(r, sc) },
	},
	{
		Name: "bandmf", Doc: "banded matrix factorization (Choquette-Choo et al. 2023), amplified under kb-poisson", Correlated: true, Workload: true, KBPoisson: true,
		params:       func(c *Config) any { return &c.BandMFConfig },
		validate:     func(c *Config, r Run, add Problems) { c.BandMFConfig.validate(r, add) },
		strategy:     func(*Config) string { return "bandmf" },
		configure:    func(c *Config, r Run, sc *strategy.Config) { c.BandMFConfig.configure(r, sc) },
		noiseVectors: func(_ *Config, _, bands int) float64 { return float64(bands) },
	},
	{
		Name: "nu-ftrl", Doc: "ν-DP-FTRL (Choquette-Choo et al. 2024): closed-form Toeplitz C, optionally truncated to banded", Correlated: true,
		params:       func(c *Config) any { return &c.NuConfig },
		validate:     func(c *Config, r Run, add Problems) { c.NuConfig.validate(r, add) },
		strategy:     func(*Config) string { return "nu" },
		configure:    func(c *Config, r Run, sc *strategy.Config) { c.NuConfig.configure(sc) },
		noiseVectors: func(c *Config, rounds, _ int) float64 { return c.NuConfig.noiseVectors(rounds) },
	},
	{
		Name: "dp-agd", Doc: "DP-AGD (Lee and Kifer 2018): zCDP gradient descent with adaptive per-round budget and noisy-max step sizes; the rounds are an outcome", Algorithm: true,
		params:    func(c *Config) any { return &c.AGDConfig },
		normalize: func(c *Config) { c.AGDConfig.normalize() },
		validate:  func(c *Config, r Run, add Problems) { c.AGDConfig.validate(c, r, add) },
		strategy:  func(*Config) string { return "identity" },
	},
	{
		Name: "blt", Doc: "buffered linear Toeplitz DP-FTRL (Dvijotham et al. 2024; McMahan et al. 2024): C from a few decaying buffers, optimized for the run, O(buffers·d) noise", Correlated: true, Workload: true,
		params:       func(c *Config) any { return &c.BLTConfig },
		validate:     func(c *Config, r Run, add Problems) { c.BLTConfig.validate(r, add) },
		strategy:     func(*Config) string { return "blt" },
		configure:    func(c *Config, r Run, sc *strategy.Config) { c.BLTConfig.configure(r, sc) },
		noiseVectors: func(c *Config, rounds, bands int) float64 { return c.BLTConfig.noiseVectors(bands) },
	},
}

// kinds reads Kinds.
var kinds = registry.Table[Kind]{List: &Kinds, Name: func(k Kind) string { return k.Name }}

// Lookup returns the kind named name, or nil.
func Lookup(name string) *Kind {
	if i := kinds.Index(name); i >= 0 {
		return &Kinds[i]
	}
	return nil
}

// KindNames lists the kinds' names, in table order.
func KindNames() []string { return kinds.Names(nil) }

// Register adds a kind after those of Kinds, and its name to Names (from an
// init function of the kind's file); it panics on a name registered twice.
// A kind registered so has no keys of its own: it sets the exported fields
// of Kind, with its strategy by name (Strategy).
func Register(k Kind) {
	kinds.Register(k)
	addName(&Kinds[len(Kinds)-1])
}

// ValidateOwn reports the problems of the kind's own keys in c for the run
// r (keys relative to the aggregator section), by the validation the YAML
// section gets: for callers that set the keys otherwise (dpfl mechanism's
// flags).
func (k *Kind) ValidateOwn(c *Config, r Run, add Problems) {
	if k.validate != nil {
		k.validate(c, r, add)
	}
}

// strategyName is the strategy.Build name of the kind for c.
func (k *Kind) strategyName(c *Config) string {
	if k.strategy != nil {
		return k.strategy(c)
	}
	return k.Strategy
}

// TreeConfig is the tree kind's own parameters.
type TreeConfig struct {
	// Estimator: vanilla (sum of dyadic nodes), online (Honaker's
	// estimator from below; the default) or full (minimum-variance
	// pseudo-inverse). DP-FTRLM (Kairouz et al. 2021 §4.1) is kind tree with
	// server.momentum (γ = 0.9 in Kairouz et al. 2021) and server.lr = 1/λ: its momentum on
	// the noisy prefix sums is exactly heavy-ball momentum on the per-round
	// updates.
	Estimator string `yaml:"estimator"`
	// Restart: none (the default: one tree over the whole run) or epoch (a
	// new tree every participation.b rounds, Kairouz et al. 2021 TreeRestart; needs
	// participation kb or minsep). C is then block-diagonal with one tree
	// per block; the sensitivity is computed exactly for the blocks (under
	// (k,b) or b-min-sep, k̂·(per-tree levels) when each client takes part
	// once per block).
	Restart string `yaml:"restart"`
	// RestartEvery: start a new tree every this many rounds (default 0: no
	// restarts; exclusive with restart: epoch).
	RestartEvery int `yaml:"restart_every"`
	// RestartSegments: restart on any schedule, given as the segments'
	// lengths in rounds, e.g. [100, 100, 50] (as dp_accounting's tree
	// aggregation events take step counts). They must sum to rounds; a new
	// tree starts with each segment. Exclusive with restart: epoch and
	// restart_every. The sensitivity is computed exactly for the blocks
	// (under single participation: the levels of the longest segment's
	// tree).
	RestartSegments []int `yaml:"restart_segments"`
	// Completion completes each tree (each restarted block's) to a power of
	// two with virtual rounds that add zeros (Kairouz et al. 2021
	// App. D.3.1, the tree completion trick; strategy.Tree.Completed): the
	// sum of a tree's rounds, which the next tree starts from, is read from
	// its root (the vanilla estimator) or from all its nodes (online,
	// full), at the price of ⌈log₂ n⌉+1 nodes per round instead of
	// ⌈log₂(n+1)⌉ (n the tree's rounds; the same for n a power of two).
	Completion bool `yaml:"completion,omitempty"`
}

// Tree estimators and their strategy names.
var (
	Estimators    = []string{"vanilla", "online", "full"}
	treeStrategy  = map[string]string{"vanilla": "tree", "online": "tree-online", "full": "tree-full"}
	treeRestarts  = []string{"none", "epoch"}
	epochSchemasS = "kb or minsep"
)

func (t *TreeConfig) normalize() {
	if t.Estimator == "" {
		t.Estimator = "online"
	}
	if t.Restart == "" {
		t.Restart = "none"
	}
}

func (t *TreeConfig) validate(r Run, add Problems) {
	registry.OneOf(add, "estimator", t.Estimator, Estimators)
	registry.OneOf(add, "restart", t.Restart, treeRestarts)
	switch {
	case t.RestartEvery < 0 || r.Rounds > 0 && t.RestartEvery > r.Rounds:
		add("restart_every", "%d must be in [1, rounds] (0: no restarts)", t.RestartEvery)
	case t.RestartEvery > 0 && t.Restart == "epoch":
		add("restart_every", "set either restart: epoch or restart_every, not both")
	case t.Restart == "epoch" && !hasEpochs(r):
		add("restart", "epoch needs participation kind %s (its b is the epoch)", epochSchemasS)
	}
	if segs := t.RestartSegments; len(segs) > 0 {
		sum, bad := 0, false
		for _, l := range segs {
			bad = bad || l <= 0
			if l > 0 {
				sum += min(l, math.MaxInt-sum) // saturates: no wrap to a small sum
			}
		}
		switch {
		case bad:
			add("restart_segments", "segment lengths must be positive, got %v", segs)
		case t.RestartEvery > 0 || t.Restart == "epoch":
			add("restart_segments", "set one of restart: epoch, restart_every and restart_segments")
		case r.Rounds > 0 && sum != r.Rounds:
			add("restart_segments", "segments %v sum to %d rounds, but rounds is %d", segs, sum, r.Rounds)
		}
	}
}

func (t *TreeConfig) configure(r Run, sc *strategy.Config) {
	sc.RestartEvery, sc.RestartSegments = t.RestartEvery, t.RestartSegments
	if t.Restart == "epoch" {
		sc.RestartEvery = r.Participation.B
	}
	if t.Completion {
		sc.Params = strategy.TreeParams{Complete: true}
	}
}

// noiseVectors: one per level (vanilla, online), every latent (full).
func (t *TreeConfig) noiseVectors(rounds int) float64 {
	n := float64(rounds)
	if t.Estimator == "full" {
		return n + denseOutputs(rounds)
	}
	return math.Ceil(math.Log2(n+1)) + 1
}

// OptimalConfig is the optimal-mf kind's own parameters.
type OptimalConfig struct {
	// MultiEpoch: optimize for (k,b)/min-sep participation with the
	// participation's b (multi-epoch MF) instead of single participation.
	MultiEpoch bool `yaml:"multi_epoch"`
}

func (o *OptimalConfig) validate(r Run, add Problems) {
	if o.MultiEpoch && !hasEpochs(r) {
		add("multi_epoch", "needs participation kind %s (its b)", epochSchemasS)
	}
}

func (o *OptimalConfig) strategy() string {
	if o.MultiEpoch {
		return "multi-epoch"
	}
	return "optimal"
}

func (o *OptimalConfig) configure(r Run, sc *strategy.Config) {
	if o.MultiEpoch && sc.Participation.Once() {
		// Optimized for the schema's b even when no client took part twice.
		sc.Participation = participation.Spaced(1, r.Participation.B)
	}
}

// BandMFConfig is the bandmf kind's own parameters.
type BandMFConfig struct {
	// Bands: number of bands b̂ (default, also written 0, as a run's
	// config.yaml does: the participation's b).
	Bands int `yaml:"bands"`
}

func (b *BandMFConfig) validate(r Run, add Problems) {
	inRange(add, "bands", b.Bands, r.Rounds, "")
	p := r.Participation
	switch {
	case p.Kind.Pattern().SampledTurns() && b.Bands > p.B:
		add("bands", "%d bands exceed participation.b = %d: kb-poisson amplification needs bands <= b", b.Bands, p.B)
	case b.Bands == 0 && !hasEpochs(r) && !p.Kind.Pattern().SampledTurns():
		add("bands", "required unless participation is kb, minsep or kb-poisson (whose b is the default)")
	}
}

func (b *BandMFConfig) configure(r Run, sc *strategy.Config) {
	sc.Bands = b.Bands
	if sc.Bands == 0 {
		sc.Bands = strategy.DefaultBands(r.Participation.B, r.Rounds)
	}
}

// NuConfig is the nu-ftrl kind's own parameters.
type NuConfig struct {
	// Nu: the damping ν in [0, 1) (default: tuned for the rounds).
	Nu *float64 `yaml:"nu"`
	// NuCoefficients: keep only the first this many Toeplitz coefficients
	// of C (default 0: all). C is then banded, its noise streams by the
	// banded recurrence in O(nu_coefficients · d) per round whatever the
	// memory mode, and its sensitivity and error are those of the
	// truncated C (computed exactly; `dpfl mechanism -strategy nu-ftrl
	// -nu-bands B` prints them).
	NuCoefficients int `yaml:"nu_coefficients"`
}

func (n *NuConfig) validate(r Run, add Problems) {
	inRange(add, "nu_coefficients", n.NuCoefficients, r.Rounds, " (0: all)")
	if n.Nu != nil && !(*n.Nu >= 0 && *n.Nu < 1) {
		add("nu", "%v must be in [0, 1)", *n.Nu)
	}
}

func (n *NuConfig) configure(sc *strategy.Config) {
	if n.Nu != nil {
		sc.Nu = *n.Nu
	}
	sc.NuBands = n.NuCoefficients
}

func (n *NuConfig) noiseVectors(rounds int) float64 {
	if n.NuCoefficients > 0 {
		return float64(n.NuCoefficients)
	}
	return float64(rounds) + denseOutputs(rounds)
}

// hasEpochs reports whether the declared schema has a b that is an epoch
// (kb, minsep).
func hasEpochs(r Run) bool {
	k := r.Participation.Kind
	return k.Grouped() && !k.Sampled()
}

// BLTConfig is the blt kind's own parameters.
type BLTConfig struct {
	// Buffers: the number of BLT buffers m, the model-sized vectors the
	// noise keeps between rounds (default, also written 0, as a run's
	// config.yaml does: participation.b − 1, BandMF's
	// memory with b bands, at most 8; required under single
	// participation; at most strategy.BLTMaxBuffers, 64). The buffers' decays and scales are optimized for the
	// run's rounds, workload and participation (an exact sensitivity);
	// `dpfl mechanism -strategy blt -buffers M` prints them.
	Buffers int `yaml:"buffers"`
}

func (b *BLTConfig) validate(r Run, add Problems) {
	switch {
	case b.Buffers < 0:
		add("buffers", "%d must be positive (0: participation.b − 1, at most %d)", b.Buffers, strategy.BLTDefaultMaxBuffers)
	case b.Buffers == 0 && !hasEpochs(r):
		add("buffers", "required unless participation is kb or minsep (whose b − 1 is the default)")
	case r.Rounds > 0 && b.Buffers > r.Rounds:
		add("buffers", "%d exceeds the %d rounds", b.Buffers, r.Rounds)
	case b.Buffers > strategy.BLTMaxBuffers:
		add("buffers", "%d is above %d, the most BLT takes (its optimization grows as buffers², and the loss stops improving after a few)", b.Buffers, strategy.BLTMaxBuffers)
	}
}

func (b *BLTConfig) configure(r Run, sc *strategy.Config) {
	sc.Buffers = b.Buffers
	if sc.Buffers == 0 {
		sc.Buffers = strategy.DefaultBLTBuffers(strategy.DefaultBands(r.Participation.B, r.Rounds))
	}
}

// noiseVectors: the buffers and the round's output.
func (b *BLTConfig) noiseVectors(bands int) float64 {
	m := b.Buffers
	if m == 0 {
		m = strategy.DefaultBLTBuffers(bands)
	}
	return float64(m + 1)
}
