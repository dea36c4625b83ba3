package experiments

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"
	"gopkg.in/yaml.v3"

	"dpfl/aggregators"
	"dpfl/clients"
	"dpfl/datasets"
	"dpfl/models"
	"dpfl/participation"
	"dpfl/privacy"
	"dpfl/results"
	"dpfl/sim"
	"dpfl/sim/rng"
)

// Options are execution knobs: they change how fast a run goes and where it
// writes, never its results.
type Options struct {
	OutDir   string    // parent folder of the run folder
	Workers  int       // client-training goroutines (default 1)
	Progress io.Writer // where the progress bar goes (nil: no bar)
}

// Outcome is a finished run.
type Outcome struct {
	Dir     string
	Summary results.Summary
}

// RunID is a short hash of the normalized configuration.
func RunID(c *Config) string {
	b, err := yaml.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("experiments: marshal config: %v", err))
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:5])
}

// Plan is everything decided before training: the data, the realized
// participation schedule, and the privacy calibration for it.
type Plan struct {
	Config   *Config
	Data     *datasets.Federated
	Schedule *participation.Schedule
	Stats    participation.Stats
	Privacy  Accounting
}

// Accounting is the privacy side of a plan.
type Accounting struct {
	Private     bool
	Sigma       float64 // noise multiplier relative to sensitivity 1
	Sensitivity float64 // L2 sensitivity of the mechanism for the realized schedule (clip = 1)
	NoiseStd    float64 // per-coordinate noise std on the clipped sum: sigma · clip · sensitivity
	Final       privacy.Guarantee
	through     []int // max participations of any client through each round
	newAcct     func() privacy.Accountant
}

// EpsilonThrough returns the epsilon spent through round t (0-based).
func (a *Accounting) EpsilonThrough(t int, delta float64) (float64, error) {
	if !a.Private {
		return math.Inf(1), nil
	}
	acct := a.newAcct()
	if err := acct.Compose(privacy.Gaussian{NoiseMultiplier: a.Sigma * a.Sensitivity}, a.through[t]); err != nil {
		return 0, err
	}
	g, err := acct.Epsilon(delta)
	return g.Epsilon, err
}

// NewPlan loads the data, plans and audits the schedule, and calibrates the
// noise, without training.
func NewPlan(cfg *Config) (*Plan, error) {
	root := rng.New(cfg.Seed)
	train, test, err := datasets.LoadMNIST(cfg.Data.Dir)
	if err != nil {
		return nil, err
	}
	data, err := datasets.NewFederated(cfg.Data.Dataset, train, test,
		datasets.PartitionSpec{Kind: cfg.Data.Partition, Clients: cfg.Data.Clients, Alpha: cfg.Data.Alpha}, root.Stream("partition"))
	if err != nil {
		return nil, err
	}
	p := &Plan{Config: cfg, Data: data}
	return p, p.schedule(root)
}

// schedule plans the participation and the privacy accounting for it.
func (p *Plan) schedule(root rng.Root) error {
	cfg := p.Config
	sched := participation.Planner{Schema: participation.Schema{Kind: participation.Uniform}, Cohort: cfg.Participation.Cohort}
	s, err := sched.Plan(p.Data.NumClients(), cfg.Rounds, root)
	if err != nil {
		return err
	}
	if err := sched.Audit(s); err != nil {
		return fmt.Errorf("experiments: the planned schedule violates its schema: %w", err)
	}
	p.Schedule, p.Stats = s, s.Stats()
	a := &p.Privacy
	a.through = s.ParticipationsThrough()
	// DP-FedAvg is the matrix mechanism with C = I: with at most k
	// participations per client its L2 sensitivity is sqrt(k).
	a.Sensitivity = math.Sqrt(float64(max(1, p.Stats.MaxParticipations)))
	if a.newAcct, err = privacy.NewByName(cfg.Privacy.Accountant, nil); err != nil {
		return err
	}
	a.Private = cfg.Private()
	if !a.Private {
		return nil
	}
	k := p.Stats.MaxParticipations
	event := func(sigma float64) privacy.Event {
		return privacy.SelfComposed{Event: privacy.Gaussian{NoiseMultiplier: sigma * a.Sensitivity}, Count: k}
	}
	if nm := cfg.Aggregator.NoiseMultiplier; nm != nil {
		a.Sigma = *nm
		acct := a.newAcct()
		if err := acct.Compose(event(a.Sigma), 1); err != nil {
			return err
		}
		if a.Final, err = acct.Epsilon(cfg.Privacy.Delta); err != nil {
			return err
		}
	} else {
		const relTol = 1e-6
		a.Sigma, a.Final, err = privacy.Calibrate(*cfg.Privacy.Epsilon, cfg.Privacy.Delta, event, a.newAcct, relTol)
		if err != nil {
			return fmt.Errorf("experiments: privacy.epsilon: %w", err)
		}
	}
	a.NoiseStd = a.Sigma * cfg.Aggregator.Clip * a.Sensitivity
	return nil
}

// Run plans, trains and writes one experiment.
func Run(ctx context.Context, cfg *Config, opts Options) (*Outcome, error) {
	plan, err := NewPlan(cfg)
	if err != nil {
		return nil, err
	}
	return plan.Run(ctx, opts)
}

// Run trains the plan and writes its results.
func (p *Plan) Run(ctx context.Context, opts Options) (*Outcome, error) {
	cfg := p.Config
	id := RunID(cfg)
	dir := filepath.Join(opts.OutDir, cfg.Name+"-"+id)
	cfgYAML, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, "config.yaml"), cfgYAML); err != nil {
		return nil, err
	}
	root := rng.New(cfg.Seed)
	acc := &p.Privacy
	agg := &aggregators.DPFedAvg{Clip: cfg.Aggregator.Clip, NoiseStd: acc.NoiseStd, ExpectedCohort: cfg.Participation.Cohort, Root: root}
	server := &aggregators.ServerSGD{LR: cfg.Server.LR, Momentum: cfg.Server.Momentum}
	if err := server.Validate(); err != nil {
		return nil, err
	}
	spec := sim.Spec{
		Data:       p.Data,
		Model:      models.Spec{Kind: cfg.Model.Kind, Hidden: cfg.Model.Hidden},
		Client:     clients.Config{Epochs: cfg.Client.Epochs, BatchSize: cfg.Client.BatchSize, LR: cfg.Client.LR, MaxExamples: cfg.Client.MaxExamples},
		Schedule:   p.Schedule,
		Aggregator: agg,
		Server:     server,
		EvalEvery:  cfg.Eval.Every,
		EvalBatch:  cfg.Eval.Batch,
		Workers:    max(1, opts.Workers),
		Root:       root,
	}
	metrics := results.NewMetrics(filepath.Join(dir, "metrics.csv"))
	bar := newBar(opts.Progress, cfg.Rounds)
	var hookErr error
	onRound := func(r sim.Round) {
		if r.Evaluated {
			eps, err := acc.EpsilonThrough(r.Round-1, cfg.Privacy.Delta)
			if err != nil && hookErr == nil {
				hookErr = err
			}
			metrics.Add(results.MetricsRow{Round: r.Round, TrainLoss: r.TrainLoss, TestLoss: r.TestLoss, TestAccuracy: r.TestAcc,
				Epsilon: eps, Cohort: r.Cohort, ClipFraction: r.Report.ClipFraction(), NoiseNorm: r.Report.NoiseNorm})
			if err := metrics.Flush(); err != nil && hookErr == nil {
				hookErr = err
			}
			if bar != nil {
				bar.Describe(fmt.Sprintf("round %d  acc %.4f  ε %s", r.Round, r.TestAcc, formatEps(eps)))
			}
		}
		if bar != nil {
			bar.Add(1)
		}
	}
	start := time.Now()
	sum, runErr := sim.Run(ctx, spec, onRound)
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(opts.Progress)
	}
	status := "complete"
	if errors.Is(runErr, sim.ErrDiverged) {
		status = "diverged"
	} else if runErr != nil {
		return nil, runErr
	}
	if hookErr != nil {
		return nil, hookErr
	}
	out := results.Summary{
		RunID: id, Name: cfg.Name, Status: status, Rounds: sum.Rounds,
		FinalAccuracy: sum.FinalAcc, BestAccuracy: sum.BestAcc, FinalTestLoss: sum.FinalLoss,
		Delta: cfg.Privacy.Delta, NoiseMultiplier: acc.Sigma, Sensitivity: acc.Sensitivity, NoiseStd: acc.NoiseStd,
		Participation: fmt.Sprintf("%s cohort %d of %d clients", cfg.Participation.Kind, cfg.Participation.Cohort, cfg.Data.Clients),
		MaxPerClient:  p.Stats.MaxParticipations,
		WallSeconds:   time.Since(start).Seconds(), Workers: spec.Workers,
	}
	if acc.Private {
		e := acc.Final.Epsilon
		out.Epsilon, out.EpsilonMethod = &e, acc.Final.Method
		if acc.Final.Order > 0 {
			out.EpsilonMethod += fmt.Sprintf(" (order %g)", acc.Final.Order)
		}
	} else {
		out.EpsilonMethod = "none (no noise)"
	}
	if err := results.WriteJSON(filepath.Join(dir, "summary.json"), out); err != nil {
		return nil, err
	}
	return &Outcome{Dir: dir, Summary: out}, nil
}

func formatEps(e float64) string {
	if math.IsInf(e, 1) {
		return "∞"
	}
	return fmt.Sprintf("%.3g", e)
}

func newBar(w io.Writer, rounds int) *progressbar.ProgressBar {
	if w == nil {
		return nil
	}
	return progressbar.NewOptions(rounds,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("training"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetItsString("rounds"),
		progressbar.OptionShowIts(),
	)
}
