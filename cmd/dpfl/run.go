package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"dpfl/experiments"
	"dpfl/results"
)

const runUsage = `Usage:
  dpfl run [flags] CONFIG.yaml

Trains the experiment CONFIG.yaml describes (see experiments/quickstart.yaml) and
writes config.yaml, metrics.csv and summary.json into its run folder. Flags may come
before or after CONFIG.yaml.

Flags:
`

// cmdRun trains one experiment from a YAML config.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	out := fs.String("out", "results/runs", "parent `DIR` of the run folder (DIR/NAME-RUNID)")
	workers := fs.Int("workers", runtime.NumCPU(), "goroutines training clients in parallel (results do not depend on it; default: the CPUs, as many as fit in -max-memory)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	events := fs.String("events", "", "append the run's progress to `FILE` as JSON lines (a round per line, then the end)")
	maxMem := fs.Float64("max-memory", experiments.DefaultMemoryGB, "refuse a config whose estimated memory is above `GB` (10^9 bytes)")
	useMPI := fs.Bool("mpi", false, "spread the run over the ranks of an MPI job (launched by mpirun or srun; needs a dpfl built with -tags mpi): each rank trains a slice of every cohort with -workers goroutines, rank 0 writes the run folder; results do not depend on the ranks")
	files, code, ok := parseInterleaved(fs, args, runUsage, stderr)
	if !ok {
		return code
	}
	if len(files) != 1 {
		fmt.Fprintf(stderr, "dpfl run: want exactly one CONFIG.yaml argument, got %d (see dpfl run -h)\n", len(files))
		return exitUsage
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *workers < 1 {
		fmt.Fprintf(stderr, "dpfl run: -workers %d must be at least 1\n", *workers)
		return exitUsage
	}
	if n := mpiLaunched(); n > 1 && !*useMPI {
		fmt.Fprintf(stderr, "dpfl run: started as one of %d MPI ranks without -mpi (each would train the whole run into the same folder): add -mpi\n", n)
		return exitUsage
	}
	if !(*maxMem > 0) || math.IsInf(*maxMem, 0) {
		fmt.Fprintf(stderr, "dpfl run: -max-memory %v must be a positive number of GB\n", *maxMem)
		return exitUsage
	}
	data := dataLoader()
	lim := experiments.Limits{MemoryGB: *maxMem, Workers: *workers, Data: data}
	if !set["workers"] {
		lim.Workers = 1 // the default is fitted below
	}
	path := files[0]
	cfg, _, err := lim.LoadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "dpfl run: invalid config:\n%v\n", err)
		return exitFailure
	}
	if !set["workers"] {
		// As many of the CPUs as fit in the memory limit (at least one,
		// which validation checked); results do not depend on it.
		m := cfg.MemoryEstimate()
		for *workers > 1 && m.Total(*workers) > *maxMem*1e9 {
			*workers--
		}
	}
	opts := experiments.Options{OutDir: *out, Workers: *workers, BaseDir: filepath.Dir(path), Log: prefixWriter{"dpfl run: ", stderr},
		Data: data, StrategyCache: strategyCache()}
	var bar runBar
	if !*quiet {
		bar.w = stderr
		opts.AfterRound = bar.round
	}
	ev, err := runEvents(*events, cfg.Name, &opts)
	if err != nil {
		fmt.Fprintf(stderr, "dpfl run: %v\n", err)
		return exitUsage
	}
	if *useMPI {
		return runMPI(ctx, cfg, opts, &bar, stdout, stderr)
	}
	res, err := experiments.Run(ctx, cfg, opts)
	bar.finish()
	if err := ev.end(cfg.Name, res, err); err != nil {
		fmt.Fprintf(stderr, "dpfl run: %v\n", err)
	}
	if err != nil {
		return failed(ctx, stderr, "run", err)
	}
	return printRun(res, stdout, stderr)
}

// printRun prints a finished run's lines (result, privacy, audit, folder).
func printRun(res *experiments.Outcome, stdout, stderr io.Writer) int {
	s := res.Summary
	if res.AlreadyComplete {
		fmt.Fprintf(stdout, "run %s was already %s in %s: nothing trained, nothing written (delete the folder to run it again)\n", s.Name, s.Status, res.Dir)
	}
	fmt.Fprintf(stdout, "run %s %s: final test accuracy %.4f (best %.4f) after %d rounds\n", s.Name, s.Status, s.FinalAccuracy, s.BestAccuracy, s.Rounds)
	if w, err := experiments.StuckWarning(res.Dir); err == nil && w != "" {
		fmt.Fprintf(stderr, "dpfl run: warning: %s\n", w)
	}
	if s.Epsilon != nil {
		fmt.Fprintf(stdout, "privacy: ε = %.4g at δ = %g (%s%s; noise multiplier σ = %.5g, sensitivity %.4g %s)\n",
			*s.Epsilon, s.Delta, s.EpsilonMethod, runAdjacency(res.Dir), s.NoiseMultiplier, s.Sensitivity, s.SensitivityFor)
		if s.Nu != nil {
			fmt.Fprintf(stdout, "ν-DP-FTRL: ν = %g\n", *s.Nu)
		}
		if s.PopulationEpsilon != nil {
			fmt.Fprintf(stdout, "population scaling: ε = %.4g (σ = %.5g) is the guarantee of a population %g times larger with %g times the cohort; the ε above is this run's clients'\n",
				*s.PopulationEpsilon, s.PopulationNoiseMultiplier, s.PopulationScale, s.PopulationScale)
		}
	} else {
		fmt.Fprintln(stdout, "privacy: none (noise multiplier 0, ε = ∞)")
	}
	if a := s.Audit; a != nil {
		iv := func(e results.AuditInterval) string {
			return fmt.Sprintf("%s [%s, %s]", fmtAuditEps(e.Epsilon), fmtAuditEps(e.Low), fmtAuditEps(e.High))
		}
		fmt.Fprintf(stdout, "audit: empirical ε at δ = %g (95%% interval): every round %s, final model %s; headline %s (audit.json)\n",
			s.Delta, iv(a.EveryRound), iv(a.FinalModel), a.ThreatModel)
		fmt.Fprintf(stdout, "audit: one-run lower bound on ε at δ = %g (95%% confidence): every round %s, final model %s\n",
			s.Delta, fmtAuditEps(a.EveryRound.OneRun), fmtAuditEps(a.FinalModel.OneRun))
	}
	fmt.Fprintf(stdout, "results: %s\n", res.Dir)
	return exitOK
}

// prefixWriter writes each line it is given with a prefix (the run's notices
// and warnings on stderr).
type prefixWriter struct {
	prefix string
	w      io.Writer
}

func (p prefixWriter) Write(b []byte) (int, error) {
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if l != "" {
			if _, err := io.WriteString(p.w, p.prefix+l); err != nil {
				return 0, err
			}
		}
	}
	return len(b), nil
}

// runBar is dpfl run's progress bar over the rounds, fed by the run's round
// reports; it appears with the first round.
type runBar struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

func (b *runBar) round(rep experiments.RoundReport) {
	if b.bar == nil {
		b.bar = progressbar.NewOptions(rep.Rounds,
			progressbar.OptionSetWriter(b.w),
			progressbar.OptionSetDescription("training"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetItsString("rounds"),
			progressbar.OptionShowIts(),
		)
		if rep.Resumed > 0 {
			b.bar.Add(rep.Resumed)
		}
	}
	if rep.Evaluated {
		b.bar.Describe(fmt.Sprintf("round %d  acc %.4f  ε %s (%s)", rep.Round, rep.Accuracy, formatEps(rep.Epsilon), rep.EpsilonLabel))
	}
	b.bar.Add(1)
}

// finish ends the bar's line, if it was drawn.
func (b *runBar) finish() {
	if b.bar != nil {
		b.bar.Finish()
		fmt.Fprintln(b.w)
	}
}

func formatEps(e float64) string {
	if math.IsInf(e, 1) {
		return "∞"
	}
	return fmt.Sprintf("%.3g", e)
}

func fmtAuditEps(f results.Float) string {
	if math.IsInf(float64(f), 1) {
		return "∞"
	}
	return fmt.Sprintf("%.3g", float64(f))
}

// runAdjacency is ", RELATION" for the neighbouring relation the run's
// metrics.csv records for its epsilon ("" when it records none).
func runAdjacency(dir string) string {
	t, err := results.ReadMetricsTable(filepath.Join(dir, "metrics.csv"))
	if err != nil || len(t.Rows) == 0 || !t.Has("adjacency") {
		return ""
	}
	if a := t.Get(len(t.Rows)-1, "adjacency"); a != "" {
		return "; " + a
	}
	return ""
}
