package experiments

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"dpfl/aggregators"
	"dpfl/clients"
	"dpfl/datasets"
	"dpfl/participation"
	"dpfl/privacy"
	"dpfl/results"
	"dpfl/sim"
	"dpfl/sim/rng"
)

// Options are execution knobs: they change how fast a run goes and where it
// writes, never its results.
type Options struct {
	BaseDir string // folder of the config file: relative paths in it are resolved against it
	// Data reads the datasets (nil: a new datasets.Loader, without default
	// folders). Runs sharing one decode MNIST once.
	Data *datasets.Loader
	// StrategyCache is the folder of optimized strategies when
	// aggregator.cache names none ("": no cache). dpfl's CLI passes the
	// user cache folder + /dpfl/strategies.
	StrategyCache string
	OutDir        string // parent folder of the run folder
	Workers       int    // client-training goroutines (default 1)
	// CheckpointEvery saves the run's state every this many rounds (0: at
	// every evaluation; negative: never). A cancelled run also saves the
	// state after its last completed round. A rerun resumes from the
	// checkpoint with identical results.
	CheckpointEvery int
	// AfterRound, if not nil, is called after every round with its report
	// (for progress displays).
	AfterRound func(RoundReport)
	// Log receives one-line notices (a resumed or discarded checkpoint);
	// nil: none.
	Log io.Writer
	// RecordFailure writes a failed run's error into ErrorFile in its run
	// folder (grids list such points as failed).
	RecordFailure bool
	// Comm, if not nil, spreads the run over processes (ranks; see
	// sim.Ranks): Run is called on rank 0, which writes the run folder,
	// and Follow on every other rank. Results do not depend on it.
	Comm sim.Comm

	started *bool // rank 0: the start was shared with the other ranks
}

// Outcome is a finished run.
type Outcome struct {
	Dir     string
	Summary results.Summary
	// AlreadyComplete is true when the run had finished before this call:
	// nothing was trained or written.
	AlreadyComplete bool
}

// RunID is a short hash of the normalized configuration and the
// fingerprints of its input files (see Inputs). Keys whose value is zero,
// empty or null are left out of the hash, so adding a configuration key whose
// default is zero does not change the IDs of existing runs (a grid keeps
// recognizing its finished points across versions); a run that reads no
// input file besides the pinned MNIST has the ID of its configuration alone.
// data.stream is left out: whether a file's examples are streamed or held in
// memory changes no result.
func RunID(c *Config, in Inputs) string {
	cc := *c
	cc.Data.Stream = ""
	var n yaml.Node
	if err := n.Encode(&cc); err != nil {
		panic(fmt.Sprintf("experiments: marshal config: %v", err))
	}
	pruneZero(&n)
	b, err := yaml.Marshal(&n)
	if err != nil {
		panic(fmt.Sprintf("experiments: marshal config: %v", err))
	}
	if len(in) > 0 {
		ib, err := yaml.Marshal(map[string]Inputs{"inputs": in})
		if err != nil {
			panic(fmt.Sprintf("experiments: marshal inputs: %v", err))
		}
		b = append(b, ib...)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:5])
}

// pruneZero removes mapping entries whose value is a zero scalar (0, "",
// false, null) or an empty collection, recursively; it reports whether n
// itself ended up empty.
func pruneZero(n *yaml.Node) bool {
	switch n.Kind {
	case yaml.MappingNode:
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			if !pruneZero(n.Content[i+1]) {
				kept = append(kept, n.Content[i], n.Content[i+1])
			}
		}
		n.Content = kept
		return len(kept) == 0
	case yaml.SequenceNode:
		for _, e := range n.Content {
			pruneZero(e)
		}
		return len(n.Content) == 0
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return true
		case "!!bool":
			return n.Value == "false"
		case "!!int", "!!float":
			f, err := strconv.ParseFloat(n.Value, 64)
			return err == nil && f == 0
		case "!!str":
			return n.Value == ""
		}
	}
	return false
}

// Plan is everything decided before training: the data, the realized
// participation schedule, the aggregation mechanism planned for it, and the
// privacy calibration.
type Plan struct {
	start   modelStart // model.init and model.freeze
	Config  *Config
	Data    *datasets.Federated
	Clients int // population size (from the data when it determines it), canaries included
	// FirstCanary is the client ID of the first canary (audit.canaries):
	// the canaries are clients FirstCanary..Clients-1, after the data's.
	FirstCanary int
	Schedule    *participation.Schedule
	Stats       participation.Stats
	// Mechanism is the aggregation mechanism for the realized schedule: its
	// strategy (strategy.Identity for dpfedavg), the participation its
	// sensitivity is computed for and that sensitivity, its sampling and
	// denominator.
	Mechanism *aggregators.Mechanism
	Privacy   Accounting
	// Warnings are problems that did not stop planning (a strategy cache
	// that could not be written, an optimizer that did not converge); Run
	// writes them to Options.Log.
	Warnings []string
	// NotConverged says, in words, how the optimizer of the run's strategy
	// stopped short of its optimum ("" when it converged or the strategy is
	// not optimized); summary.json records it (strategy_not_converged).
	NotConverged string
	// underNoise, when in (0, 1), multiplies the noise the run adds while
	// its accounting still says Privacy.Sigma: a deliberately broken run
	// for the audit's negative control. Tests only; no configuration key
	// sets it.
	underNoise float64
}

// Accounting is the privacy calibration of a plan's mechanism.
type Accounting struct {
	Private     bool
	Amplified   bool              // Poisson sampling: accounted as sampled Gaussians
	Sigma       float64           // noise multiplier relative to sensitivity 1
	Sensitivity float64           // the mechanism's L2 sensitivity for the realized schedule (clip = 1)
	NoiseStd    float64           // per-coordinate noise std on the clipped sum: sigma · clip · sensitivity
	Denominator float64           // fixed divisor of the noisy sum (target cohort, or q · clients)
	Final       privacy.Guarantee // of this run's clients, at Sigma
	// WholeRun is set when EpsilonThrough reports the whole run's epsilon at
	// every round (correlated-noise mechanisms without sampling, accounted as
	// one Gaussian over all rounds): an upper bound for every prefix, and
	// labelled so in metrics.csv and the progress bar.
	WholeRun bool
	// Population scaling (privacy.population_scale > 1): the noise
	// multiplier and guarantee of the simulated larger population; Sigma is
	// PopulationSigma / PopulationScale.
	PopulationScale float64
	PopulationSigma float64
	Population      privacy.Guarantee
	// ClipCountStd is adaptive clipping's noise std on the count of
	// unclipped clients (aggregator.clip_count_stddev, or its default);
	// 0 without adaptive clipping.
	ClipCountStd float64
	// AGDBudget is DP-AGD's total zCDP budget ρ (aggregator.kind dp-agd):
	// the ledger never spends more, and Final is its conversion (the
	// guarantee whatever the rounds turn out to be); 0 otherwise.
	AGDBudget float64
	// MonteCarlo is set when Final is a Monte Carlo estimate
	// (privacy.amplification: balls-in-bins): the whole run's, at every
	// round.
	MonteCarlo *MonteCarloAccount
	mech       *aggregators.Mechanism
	newAcct    func() privacy.Accountant
}

// EpsilonThrough returns the epsilon spent through round t (0-based).
func (a *Accounting) EpsilonThrough(t int, delta float64) (float64, error) {
	if !a.Private {
		return math.Inf(1), nil
	}
	if a.AGDBudget > 0 || a.MonteCarlo != nil {
		// The budget's guarantee, or the whole run's Monte Carlo estimate:
		// an upper bound at every round.
		return a.Final.Epsilon, nil
	}
	acct := a.newAcct()
	if err := acct.Compose(a.mech.EventThrough(a.Sigma, t+1), 1); err != nil {
		return 0, err
	}
	g, err := acct.Epsilon(delta)
	return g.Epsilon, err
}

// data is the loader the options name, or a new one.
func (o Options) data() *datasets.Loader {
	if o.Data == nil {
		return new(datasets.Loader)
	}
	return o.Data
}

// NewPlan loads the data, plans and audits the schedule, and calibrates the
// noise, without training. Relative file names in cfg are resolved against
// opts.BaseDir (the config file's folder); the data is read with opts.Data.
func NewPlan(ctx context.Context, cfg *Config, opts Options) (*Plan, error) {
	opts.Data = opts.data()
	root := rng.New(cfg.Seed)
	data, err := loadDataContext(ctx, cfg, opts, root)
	if err != nil {
		return nil, err
	}
	// A model that cannot be built for the data, or whose tensors cannot
	// be recorded, is refused before anything is trained.
	ts, err := tensorsOf(cfg, data.Train.Dim, data.Train.Classes)
	if err != nil {
		return nil, err
	}
	start, err := newModelStart(cfg, opts.BaseDir, ts)
	if err != nil {
		return nil, err
	}
	p := &Plan{start: start, Config: cfg, Data: data, Clients: data.NumClients() + cfg.Audit.Canaries, Warnings: append([]string(nil), data.Notes...)}
	if err := p.schedule(ctx, root, opts); err != nil {
		return nil, err
	}
	return p, p.checkNoiseMemory(ctx, p.trainedParams())
}

// NewAccount plans the schedule and the privacy accounting without training
// (what `dpfl account CONFIG.yaml` prints). It needs only the population
// size: data.clients for iid and dirichlet (no data read); the writer
// partition counts the writers in the QMNIST label files; the text datasets
// are read and tokenized, since their population depends on the text.
func NewAccount(ctx context.Context, cfg *Config, opts Options) (*Plan, error) {
	opts.Data = opts.data()
	root := rng.New(cfg.Seed)
	n, err := population(ctx, cfg, opts, root)
	if err != nil {
		return nil, err
	}
	p := &Plan{Config: cfg, Clients: n + cfg.Audit.Canaries}
	return p, p.schedule(ctx, root, opts)
}

// resolve makes a relative path relative to baseDir.
func resolve(baseDir, path string) string {
	if path == "" || filepath.IsAbs(path) || baseDir == "" {
		return path
	}
	return filepath.Join(baseDir, path)
}

// diurnalSpec converts the configuration to participation's form.
func (a AvailabilityConfig) diurnalSpec() participation.DiurnalSpec {
	s := participation.DiurnalSpec{PeakHour: a.PeakHour, Peak: a.Peak, Trough: a.Trough, WindowHours: a.WindowHours}
	for _, z := range a.Zones {
		s.Zones = append(s.Zones, participation.TimeZone{Offset: z.Offset, Weight: z.Weight})
	}
	return s
}

// planner builds the scheduler the configuration describes.
func (c *Config) planner(numClients int, root rng.Root, baseDir string) (participation.Planner, error) {
	pc := c.Participation
	p := participation.Planner{
		Schema:   pc.schema(),
		Cohort:   pc.Cohort,
		Clock:    participation.Clock{StartHour: pc.Clock.StartHour, RoundSeconds: 60 * pc.Clock.RoundMinutes, WaitSeconds: 60 * pc.Clock.WaitMinutes},
		MaxWaits: pc.MaxWaits,
	}
	k, ok := lookupAvailability(pc.Availability.Kind)
	if !ok {
		return p, fmt.Errorf("experiments: unknown availability %q", pc.Availability.Kind)
	}
	a, err := k.Build(pc.Availability, numClients, root, baseDir)
	if err != nil {
		return p, err
	}
	p.Avail = a
	return p, nil
}

// schedule plans the participation, audits it, and calibrates the privacy
// accounting for the participation that will actually happen.
func (p *Plan) schedule(ctx context.Context, root rng.Root, opts Options) error {
	cfg := p.Config
	n := p.Clients
	if pc := cfg.Participation; !pc.Kind.Sampled() && pc.Cohort > n {
		return fmt.Errorf("experiments: participation.cohort: %d clients per round cannot be drawn from the %d clients of the data", pc.Cohort, n)
	}
	if d := cfg.Privacy.Delta; cfg.Private() && !cfg.Privacy.AllowLargeDelta && d*float64(n) >= 1 {
		return fmt.Errorf("experiments: privacy.delta: %s", largeDelta(d, n))
	}
	planner, err := cfg.planner(n, root, opts.BaseDir)
	if err != nil {
		return err
	}
	s, err := planner.PlanContext(ctx, n, cfg.Rounds, root)
	if errors.Is(err, participation.ErrWaitLimit) {
		return fmt.Errorf("experiments: participation.max_waits: %w", err)
	} else if err != nil {
		return err
	}
	// The audit re-checks the realized schedule against the declared schema
	// before any epsilon is computed: a violation is an error.
	if err := planner.Audit(s); err != nil {
		return fmt.Errorf("experiments: the planned schedule violates its schema: %w", err)
	}
	p.Schedule, p.Stats = s, s.Stats()
	if p.Stats.MaxParticipations == 0 {
		why := "participation.availability: no client is available at any round's time"
		if k, _ := lookupAvailability(cfg.Participation.Availability.Kind); k.NoneAvailable != nil {
			why = k.NoneAvailable(cfg)
		} else if pc := cfg.Participation; pc.Kind.Sampled() {
			why = fmt.Sprintf("participation.q: %g samples no client in %d rounds", pc.Q, cfg.Rounds)
		}
		return fmt.Errorf("experiments: no client takes part in any of the %d rounds: %s", cfg.Rounds, why)
	}
	if err := p.auditPlan(root); err != nil { // audit.go
		return err
	}
	if err := p.buildMechanism(ctx, planner.Schema, opts.StrategyCache); err != nil { // mechanism.go
		return err
	}
	return p.calibrate(ctx, root, opts.Workers)
}

// calibrate sets the plan's accounting: sigma (given, or calibrated for the
// target epsilon, ending early when ctx is done) and the guarantee of the
// mechanism at it; a balls-in-bins amplified run's Monte Carlo account
// draws from streams of root on workers goroutines.
func (p *Plan) calibrate(ctx context.Context, root rng.Root, workers int) error {
	cfg, m, a := p.Config, p.Mechanism, &p.Privacy
	var err error
	if a.newAcct, err = privacy.NewByName(cfg.Privacy.Accountant, nil); err != nil {
		return err
	}
	a.mech, a.Amplified, a.WholeRun = m, m.Amplified(), m.WholeRun()
	if m.Sampling != nil && m.Sampling.Bins {
		a.Amplified = false // balls-in-bins: every turn of a bin, composed unamplified (q = 1)
	}
	a.Sensitivity, a.Denominator = m.Sensitivity.Value, m.Denominator
	a.Private = cfg.Private()
	if !a.Private {
		return nil
	}
	if cfg.AGD() {
		return a.calibrateAGD(cfg)
	}
	final := func(sigma float64) (privacy.Guarantee, error) {
		acct := a.newAcct()
		if err := acct.Compose(m.Event(sigma), 1); err != nil {
			return privacy.Guarantee{}, err
		}
		return acct.Epsilon(cfg.Privacy.Delta)
	}
	if nm := cfg.Aggregator.NoiseMultiplier; nm != nil {
		a.Sigma = *nm
		if a.Final, err = final(a.Sigma); err != nil {
			return err
		}
	} else {
		if m.ClipCount != nil {
			// The count is released whatever the update's noise: if it
			// alone spends the target, no update noise can meet it.
			if g, err := final(1e9); err == nil && g.Epsilon >= *cfg.Privacy.Epsilon {
				return fmt.Errorf("experiments: aggregator.clip_count_stddev: the clip count's noise (std %g) alone spends ε = %.4g of the target %g; raise it", a.ClipCountStd, g.Epsilon, *cfg.Privacy.Epsilon)
			}
		}
		const relTol = 1e-6
		a.Sigma, a.Final, err = privacy.CalibrateContext(ctx, *cfg.Privacy.Epsilon, cfg.Privacy.Delta, m.Event, a.newAcct, relTol)
		if err != nil {
			return fmt.Errorf("experiments: privacy.epsilon: %w", err)
		}
	}
	if s := cfg.Privacy.PopulationScale; s > 1 {
		// The calibration above is the larger population's (same
		// participation pattern, s times the cohort). This run adds 1/s of
		// that noise to its own sum, so its clients get the guarantee of
		// noise multiplier sigma/s.
		a.PopulationScale, a.PopulationSigma, a.Population = s, a.Sigma, a.Final
		a.Sigma /= s
		if a.Final, err = final(a.Sigma); err != nil {
			return fmt.Errorf("experiments: privacy.population_scale: accounting this run's clients: %w", err)
		}
	}
	if cfg.Privacy.Amplification == AmplificationBIB {
		if err := p.amplifyBIB(ctx, root, max(1, workers)); err != nil { // ballsinbins.go
			return err
		}
	}
	a.NoiseStd = m.NoiseStd(cfg.Aggregator.Clip, a.Sigma)
	return nil
}

// calibrateAGD sets DP-AGD's budget: the largest zCDP ρ whose conversion
// by the configured accountant (a privacy.ZCDPBudgeter: zcdp standard,
// zcdp-cks CKS) meets privacy.epsilon at privacy.delta. Final is that ρ's guarantee, accounted
// as a Gaussian of noise multiplier 1/√(2ρ) (exactly ρ-zCDP); Sigma is the
// first gradient's noise multiplier.
func (a *Accounting) calibrateAGD(cfg *Config) error {
	acct := a.newAcct()
	b, ok := acct.(privacy.ZCDPBudgeter)
	if !ok {
		return fmt.Errorf("experiments: privacy.accountant: %s cannot spend dp-agd's zCDP budget", cfg.Privacy.Accountant)
	}
	rho, err := b.BudgetFor(*cfg.Privacy.Epsilon, cfg.Privacy.Delta)
	if err != nil {
		return fmt.Errorf("experiments: privacy.epsilon: %w", err)
	}
	if err := acct.Compose(privacy.Gaussian{NoiseMultiplier: privacy.GaussianSigma(rho)}, 1); err != nil {
		return err
	}
	if a.Final, err = acct.Epsilon(cfg.Privacy.Delta); err != nil {
		return err
	}
	a.AGDBudget, a.WholeRun, a.Amplified = rho, true, false
	a.Sensitivity = 1
	a.Sigma = privacy.GaussianSigma(cfg.Aggregator.GradientShare * rho)
	a.NoiseStd = a.Sigma * cfg.Aggregator.Clip
	return nil
}

// Run plans, trains and writes one experiment into its run folder,
// OutDir/NAME-RUNID (see runDir for the rules that keep a finished result
// safe). A run that finished before is not trained again: Run returns it
// with AlreadyComplete set and writes nothing.
func Run(ctx context.Context, cfg *Config, opts Options) (*Outcome, error) {
	opts.Data = opts.data()
	defer opts.leading()()
	rd, err := identifyContext(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	if s, _ := rd.finished(cfg); s != nil {
		return &Outcome{Dir: rd.dir, Summary: *s, AlreadyComplete: true}, nil
	}
	plan, err := NewPlan(ctx, cfg, opts)
	if err != nil {
		if opts.RecordFailure && ctx.Err() == nil {
			err = rd.recordFailure(err)
		}
		return nil, err
	}
	return plan.run(ctx, opts, rd)
}

// Run trains the plan and writes its results (see the function Run).
func (p *Plan) Run(ctx context.Context, opts Options) (*Outcome, error) {
	opts.Data = opts.data()
	defer opts.leading()()
	rd, err := identifyContext(ctx, p.Config, opts)
	if err != nil {
		return nil, err
	}
	return p.run(ctx, opts, rd)
}

// run takes the run folder, then trains unless the run is complete.
func (p *Plan) run(ctx context.Context, opts Options, rd *runDir) (*Outcome, error) {
	for _, w := range p.Warnings {
		logf(opts.Log, "warning: %s", w)
	}
	done, err := rd.open(p.Config, opts.Log)
	if err != nil || done != nil {
		return done, err
	}
	defer rd.close()
	out, err := p.train(ctx, opts, rd)
	if err != nil && opts.RecordFailure && ctx.Err() == nil {
		if werr := results.WriteFileAtomic(filepath.Join(rd.dir, ErrorFile), []byte(err.Error()+"\n")); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	return out, err
}

// train runs the plan in the run folder rd, which this process owns.
func (p *Plan) train(ctx context.Context, opts Options, rd *runDir) (*Outcome, error) {
	cfg := p.Config
	file, err := p.configFile(rd.cfgYAML)
	if err != nil {
		return nil, err
	}
	if err := results.WriteFileAtomic(filepath.Join(rd.dir, "config.yaml"), file); err != nil {
		return nil, err
	}
	spec, err := p.simSpec(opts)
	if err != nil {
		return nil, err
	}
	if err := writeParticipation(filepath.Join(rd.dir, "participation.json"), p.Schedule, p.Stats); err != nil {
		return nil, err
	}
	aud := p.newAuditor(spec.Root, p.Config.Model.NumParams(p.Data.Train.Dim, p.Data.Train.Classes))
	if aud != nil {
		spec.Canary = aud.canary
	}
	rec, err := p.newRecorder(rd, opts, &spec, aud)
	if err != nil {
		return nil, err
	}
	if err := opts.distribute(&spec); err != nil {
		return nil, err
	}
	sum, runErr := sim.Run(ctx, spec, nil)
	p.Data.Close() // a streamed file (read-only; a later run opens it again)
	status := "complete"
	if errors.Is(runErr, sim.ErrDiverged) {
		status = "diverged"
	} else if runErr != nil {
		return nil, runErr
	}
	if rec.err != nil {
		return nil, rec.err
	}
	// The inputs were fingerprinted before planning; a file edited since
	// then may have been read in either version.
	if now, err := FingerprintContext(ctx, cfg, opts); err != nil {
		return nil, err
	} else if ch := rd.inputs.Changed(now); len(ch) > 0 {
		return nil, fmt.Errorf("experiments: %s changed while the run was going: its results may mix both versions and are not recorded as complete; rerun (a new run ID) to train on the new files", strings.Join(ch, ", "))
	}
	return rec.finish(status, sum, spec)
}

// simSpec builds the run's simulation: the mechanism's aggregator and noise,
// the server optimizer, the clients' training.
func (p *Plan) simSpec(opts Options) (sim.Spec, error) {
	cfg := p.Config
	root := rng.New(cfg.Seed)
	src, err := p.Mechanism.Noise(root, p.trainedParams(), cfg.Aggregator.Mode())
	if err != nil {
		return sim.Spec{}, err
	}
	server := cfg.serverOptimizer()
	if err := server.Validate(); err != nil && !cfg.AGD() { // dp-agd has no server optimizer
		return sim.Spec{}, err
	}
	sigma := p.Privacy.Sigma
	if p.underNoise > 0 && p.underNoise < 1 {
		sigma *= p.underNoise // tests only: a run that under-noises, for the audit's negative control
	}
	agg, err := p.adaptiveClip(p.Mechanism.Aggregator(cfg.Aggregator.Clip, sigma, src), root)
	if err != nil {
		return sim.Spec{}, err
	}
	var alg sim.Algorithm // nil: FedAvg with agg and server
	if cfg.AGD() {
		agd, err := p.newAGD(root)
		if err != nil {
			return sim.Spec{}, err
		}
		alg = sim.NewAGD(agd)
	}
	data, val := p.Data, (*datasets.Dataset)(nil)
	if v := cfg.Eval.Validation; v > 0 {
		d := *p.Data
		if val, d.Test, err = datasets.SplitValidation(p.Data.Test, v, root.Stream("eval/validation")); err != nil {
			return sim.Spec{}, fmt.Errorf("experiments: eval.validation: %w", err)
		}
		data = &d
	}
	return sim.Spec{
		Algorithm:  alg,
		Data:       data,
		Validation: val,
		Model:      cfg.Model,
		Client:     clients.Config{Epochs: cfg.Client.Epochs, BatchSize: cfg.Client.BatchSize, LR: cfg.Client.LR, MaxExamples: cfg.Client.MaxExamples},
		Schedule:   p.Schedule,
		Aggregator: agg,
		Server:     server,
		EvalEvery:  cfg.Eval.Every,
		EvalBatch:  cfg.Eval.Batch,
		Workers:    max(1, opts.Workers),
		Root:       root,
		Init:       p.start.init,
		Trainable:  p.start.trainable,
	}, nil
}

// trainedParams is the number of the model's trained parameters (all but
// model.freeze's): the dimension of the clipped updates and the noise.
func (p *Plan) trainedParams() int {
	return p.start.trainedParams(p.Config.Model.NumParams(p.Data.Train.Dim, p.Data.Train.Classes))
}

// CheckpointFile is the name of a run's checkpoint in its folder; it exists
// only while the run is unfinished.
const CheckpointFile = "checkpoint.bin"

// loadCheckpoint returns the run's checkpoint of a model of params
// parameters, or nil when there is none or it cannot be used (said on log).
func loadCheckpoint(path, id string, params int, log io.Writer) *results.Checkpoint {
	ck, err := results.ReadCheckpointFor(path, params)
	switch {
	case os.IsNotExist(err):
		return nil
	case err != nil:
		logf(log, "%v: starting the run over", err)
		return nil
	case ck.RunID != id:
		logf(log, "%s belongs to run %s, not %s: starting over", path, ck.RunID, id)
		return nil
	}
	return ck
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// Summary returns the parts of a run summary known before training.
func (p *Plan) Summary() results.Summary {
	s := results.Summary{Name: p.Config.Name, Report: p.Report(), ClipCountStddev: p.Privacy.ClipCountStd, Nu: p.Mechanism.Parameters().Nu,
		StrategyNotConverged: p.NotConverged}
	if p.Privacy.MonteCarlo != nil {
		s.MonteCarloGuarantee = p.Privacy.Final.String()
	}
	return s
}

// Report is the plan's privacy report: the mechanism, the realized
// participation, the sensitivity, the noise and the guarantee. It is what
// dpfl account prints for the configuration, summary.json's privacy fields
// and grid -dry-run's row. DP-FedAvg's strategy (C = I) is not listed: its
// report has no Strategy, Schema or SensitivityMethod.
func (p *Plan) Report() privacy.Report {
	cfg, a, st, m := p.Config, &p.Privacy, p.Stats, p.Mechanism
	r := privacy.Report{
		Mechanism: cfg.Aggregator.Kind, Clip: cfg.Aggregator.Clip, Steps: cfg.Rounds, Amplified: a.Amplified,
		Participation: p.describeParticipation(), MaxParticipations: st.MaxParticipations,
		MeanCohort: st.MeanCohort, MeanFill: st.MeanFill, MinSeparation: st.MinSeparation,
		Sensitivity: a.Sensitivity, SensitivityFor: p.SensitivityFor(), SensitivityExact: true,
		NoiseMultiplier: a.Sigma, NoiseStd: a.NoiseStd, Denominator: a.Denominator, Calibrated: cfg.Privacy.Epsilon != nil,
		Delta: cfg.Privacy.Delta, Accountant: cfg.Privacy.Accountant,
		EpsilonMethod: "none (no noise)", Guarantee: "none (no noise: ε = ∞)",
	}
	if !m.Independent() {
		r.Strategy, r.Schema = m.Strategy.String(), m.Pattern.String()
		r.SensitivityMethod, r.SensitivityExact = m.Sensitivity.Method, m.Sensitivity.Exact
	}
	if a.Private {
		r.SetGuarantee(a.Final)
		if mc := a.MonteCarlo; mc != nil {
			r.Samples, r.Confidence, r.Bins = mc.Samples, mc.Confidence, cfg.Participation.B
			r.Unamplified = fmt.Sprintf("%s at σ = %.6g", mc.Unamplified, mc.UnamplifiedSigma)
		}
		if a.PopulationScale > 1 {
			pe := a.Population.Epsilon
			r.PopulationScale, r.PopulationNoiseMultiplier, r.PopulationEpsilon, r.PopulationGuarantee = a.PopulationScale, a.PopulationSigma, &pe, a.Population.String()
		}
	}
	return r
}

// SensitivityFor says what the sensitivity is of, for displays (see
// aggregators.Mechanism.SensitivityFor).
func (p *Plan) SensitivityFor() string {
	if p.Privacy.AGDBudget > 0 {
		return fmt.Sprintf("of each round's clipped sum; σ is dp-agd's first gradient's, and every release is paid from a zCDP budget ρ = %.6g", p.Privacy.AGDBudget)
	}
	if mc := p.Privacy.MonteCarlo; mc != nil {
		return fmt.Sprintf("for one participation, in every turn of its bin (balls-in-bins, %d bins; amplified by the secret bins: Monte Carlo over the dominating pair, %d samples each side)", p.Config.Participation.B, mc.Samples)
	}
	return p.Mechanism.SensitivityFor()
}

// RoundsLine describes the realized schedule: the cohorts (with their fill
// of the target when there is one), the most participations of any client,
// and the smallest separation between two of a client's participations
// (only when some client takes part twice).
func (p *Plan) RoundsLine() string {
	st, pc := p.Stats, p.Config.Participation
	var b strings.Builder
	fmt.Fprintf(&b, "%d rounds, mean cohort %.1f", p.Config.Rounds, st.MeanCohort)
	if pc.Kind.Pattern().RandomGroups {
		b.WriteString(" (whole random bins)")
	} else if pc.Kind.Sampled() {
		b.WriteString(" (Poisson-sampled)")
	} else {
		fmt.Fprintf(&b, " of %d (fill %.3f", pc.Cohort, st.MeanFill)
		if st.ShortRounds > 0 {
			fmt.Fprintf(&b, ", %d short rounds", st.ShortRounds)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ", at most %d participations per client", st.MaxParticipations)
	if st.MaxParticipations > 1 {
		fmt.Fprintf(&b, ", at least %d round(s) apart", st.MinSeparation)
	}
	return b.String()
}

// describeParticipation is describe for the plan's population, saying how
// many of its clients are canaries.
func (p *Plan) describeParticipation() string {
	s := p.Config.Participation.describe(p.Clients)
	if n := p.Config.Audit.Canaries; n > 0 {
		s += fmt.Sprintf(" (%d of the clients are audit canaries)", n)
	}
	return s
}

// describe is a one-line account of the participation setting.
func (p ParticipationConfig) describe(clients int) string {
	var s string
	switch pt := p.Kind.Pattern(); {
	case pt.RandomGroups:
		s = fmt.Sprintf("%s b=%d over %d clients", p.Kind, p.B, clients)
	case pt.SampledTurns():
		s = fmt.Sprintf("%s b=%d q=%g over %d clients", p.Kind, p.B, p.Q, clients)
	case pt.Sampled():
		s = fmt.Sprintf("%s q=%g over %d clients", p.Kind, p.Q, clients)
	case pt.Separation() > 0:
		s = fmt.Sprintf("%s k=%d b=%d, cohort %d of %d clients", p.Kind, p.K, p.B, p.Cohort, clients)
	default:
		s = fmt.Sprintf("%s, cohort %d of %d clients", p.Kind, p.Cohort, clients)
	}
	return s + ", availability " + p.Availability.Kind
}

// participationRecord is the content of participation.json.
type participationRecord struct {
	participation.Stats
	Rounds []participationRound `json:"rounds"`
}

type participationRound struct {
	Round    int     `json:"round"`
	Cohort   int     `json:"cohort"`
	Eligible int     `json:"eligible"`
	Waits    int     `json:"waits"`
	UTCHour  float64 `json:"utc_hour"`
}

// writeParticipation records the realized schedule's statistics and, per
// round, the cohort fill, eligible clients, waits and simulated hour.
func writeParticipation(path string, s *participation.Schedule, st participation.Stats) error {
	rec := participationRecord{Stats: st, Rounds: make([]participationRound, len(s.Rounds))}
	for t, ids := range s.Rounds {
		r := participationRound{Round: t + 1, Cohort: len(ids)}
		if s.Eligible != nil {
			r.Eligible, r.Waits = s.Eligible[t], s.Waits[t]
		}
		if s.Times != nil {
			r.UTCHour = math.Mod(s.Times[t]/3600, 24)
		}
		rec.Rounds[t] = r
	}
	return results.WriteJSON(path, rec)
}
