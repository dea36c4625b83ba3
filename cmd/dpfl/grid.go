package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"dpfl/experiments"
	"dpfl/results"
	"dpfl/results/figures"
)

const gridUsage = `Usage:
  dpfl grid [flags] GRID.yaml

Runs every point of an experiment grid (a run configuration plus grid: and
zip: keys; see experiments/README.md) into -out, one run folder per point,
keeping index.csv (one row per point) current as points finish, then writes
accuracy_vs_epsilon and accuracy_vs_round (each .png at 300 dpi and .pdf),
best.csv, report.html (figures embedded) and rounds.csv (every finished run's
evaluated rounds in one table) there.

Resumes by default: finished points are skipped and interrupted ones continue
from their checkpoints with identical results. Ctrl-C saves the running
points' progress. -shard i/n runs a deterministic 1/n of the points (0-based
i, as $SLURM_ARRAY_TASK_ID or $JOB_COMPLETION_INDEX), so shards writing to one
shared -out folder together make the whole grid.

Flags:
`

// cmdGrid runs an experiment grid.
func cmdGrid(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("grid", flag.ContinueOnError)
	out := fs.String("out", "", "grid `DIR` (default results/grids/NAME, NAME the grid's name)")
	parallel := fs.Int("parallel", 0, "points run at once (default: the number of CPUs, at most the points left)")
	workers := fs.Int("workers", 1, "client-training goroutines per point")
	shard := fs.String("shard", "", "run shard `i/n` of the points (0 <= i < n)")
	dry := fs.Bool("dry-run", false, "list the points with their calibrated sigma and epsilon and the mechanisms to optimize; train nothing")
	quiet := fs.Bool("quiet", false, "no progress display")
	events := fs.String("events", "", "append the grid's progress to `FILE` as JSON lines (each point's start, rounds and end)")
	ckpt := fs.Int("checkpoint-every", 0, "save each run's state every `N` rounds (0: at every evaluation)")
	maxMem := fs.Float64("max-memory", experiments.DefaultMemoryGB, "refuse points whose estimated memory is above `GB` (10^9 bytes); the default -parallel runs as many points at once as fit")
	files, code, ok := parseInterleaved(fs, args, gridUsage, stderr)
	if !ok {
		return code
	}
	if len(files) != 1 {
		fmt.Fprintln(stderr, "dpfl grid: want exactly one GRID.yaml argument")
		return exitUsage
	}
	if *workers < 1 || *parallel < 0 {
		fmt.Fprintln(stderr, "dpfl grid: -workers must be at least 1 and -parallel non-negative")
		return exitUsage
	}
	if !(*maxMem > 0) || math.IsInf(*maxMem, 0) {
		fmt.Fprintf(stderr, "dpfl grid: -max-memory %v must be a positive number of GB\n", *maxMem)
		return exitUsage
	}
	si, sn := 0, 1
	if *shard != "" {
		var err error
		if si, sn, err = experiments.ParseShard(*shard); err != nil {
			fmt.Fprintf(stderr, "dpfl grid: -shard: %v\n", err)
			return exitUsage
		}
	}
	data, cache := dataLoader(), strategyCache()
	g, err := experiments.Limits{MemoryGB: *maxMem, Workers: *workers, Data: data}.LoadGrid(files[0])
	if err != nil {
		fmt.Fprintf(stderr, "dpfl grid: invalid grid:\n%v\n", err)
		return exitFailure
	}
	if *out == "" {
		*out = filepath.Join("results", "grids", g.Name)
	}
	points, _ := g.Shard(si, sn)
	if *dry {
		return gridDryRun(ctx, g, points, *out, experiments.Options{BaseDir: filepath.Dir(g.File), Data: data, StrategyCache: cache}, stdout, stderr)
	}
	planned := g.Planned(*out, points) // under tune:, the points that will run
	left := 0
	for _, p := range planned {
		if _, ok := experiments.Finished(*out, p); !ok {
			left++
		}
	}
	*parallel = gridParallel(planned, left, *parallel, *workers, *maxMem)
	fmt.Fprintf(stdout, "grid %s: %d points (%d in this shard, %d to run), %d at once, into %s\n", g.Name, len(g.Points), len(points), left, *parallel, *out)
	if t := g.TuneSummary(*out); t != "" {
		fmt.Fprintf(stdout, "%s\n", t)
	}
	opts := experiments.GridOptions{OutDir: *out, Parallel: *parallel, Workers: *workers, Shard: si, Shards: sn, CheckpointEvery: *ckpt,
		Data: data, StrategyCache: cache}
	var disp *gridDisplay
	if !*quiet {
		disp = newGridDisplay(stderr, g, planned, *out)
		opts.Events, opts.Log = disp, disp
	}
	ev, err := gridEventStream(*events, &opts)
	if err != nil {
		fmt.Fprintf(stderr, "dpfl grid: %v\n", err)
		return exitUsage
	}
	res, runErr := experiments.RunGrid(ctx, g, opts)
	if disp != nil {
		disp.finish()
	}
	if err := ev.close(); err != nil {
		fmt.Fprintf(stderr, "dpfl grid: %v\n", err)
	}
	if res == nil {
		return failed(ctx, stderr, "grid", runErr)
	}
	elsewhere := ""
	if res.Elsewhere > 0 {
		elsewhere = fmt.Sprintf(", %d being run by another process", res.Elsewhere)
	}
	if res.NotChosen > 0 || res.Waiting > 0 {
		elsewhere += fmt.Sprintf(", %d not chosen by tuning", res.NotChosen)
		if res.Waiting > 0 {
			elsewhere += fmt.Sprintf(", %d waiting for tuning runs of other shards (run this again when they finish)", res.Waiting)
		}
	}
	fmt.Fprintf(stdout, "ran %d, skipped %d finished, %d failed%s; index: %s\n", res.Ran, res.Skipped, res.Failed, elsewhere, res.Index)
	if stuck := experiments.StuckRuns(*out); len(stuck) > 0 {
		fmt.Fprintf(stderr, "dpfl grid: warning: test accuracy never rose above its first evaluation in %d runs (the learning rate may be too high or too low): %s\n",
			len(stuck), strings.Join(stuck, ", "))
	}
	return gridFigures(ctx, g, *out, runErr, stdout, stderr)
}

// gridParallel is the number of points to run at once: -parallel, or (0)
// as many as the CPUs allow and fit in -max-memory together; never more
// than the left points to run.
func gridParallel(points []experiments.Point, left, parallel, workers int, maxMem float64) int {
	if parallel == 0 {
		parallel = max(1, min(runtime.NumCPU()/workers, left))
		largest := 0.0
		for _, p := range points {
			largest = max(largest, p.Config.MemoryEstimate().Total(workers))
		}
		if float64(parallel)*largest > maxMem*1e9 {
			parallel = max(1, int(maxMem*1e9/largest))
		}
	}
	return max(1, min(parallel, left))
}

// gridFigures draws the grid's figures and returns the command's exit code.
func gridFigures(ctx context.Context, g *experiments.Grid, out string, runErr error, stdout, stderr io.Writer) int {
	paths, figErr := figures.Write(out, figures.Options{X: g.Plot.X, Y: g.Plot.Y, By: g.Plot.By})
	if errors.Is(figErr, figures.ErrNoFinishedPoint) {
		// One shard of a grid, or a grid stopped early: no point has all its
		// runs yet, which is not a failure of this invocation.
		fmt.Fprintf(stdout, "no figures yet: %s\n", strings.TrimPrefix(oneLine(figErr), "figures: "))
		figErr = nil
	} else if figErr != nil {
		fmt.Fprintf(stderr, "dpfl grid: no figures: %v\n", oneLine(figErr))
	} else {
		fmt.Fprintf(stdout, "figures: %s\n", strings.Join(paths, " "))
	}
	switch {
	case ctx.Err() != nil:
		return exitInterrupted
	case runErr != nil:
		fmt.Fprintf(stderr, "dpfl grid: %v\n", runErr)
		return exitFailure
	case figErr != nil:
		return exitFailure
	}
	return exitOK
}

// gridDryRun prints the points with their calibrated privacy, and the
// mechanisms that training would optimize.
func gridDryRun(ctx context.Context, g *experiments.Grid, points []experiments.Point, out string, env experiments.Options, stdout, stderr io.Writer) int {
	fmt.Fprintf(stdout, "grid %s: %d points, %d in this shard (output %s)\n", g.Name, len(g.Points), len(points), out)
	if t := g.TuneSummary(out); t != "" {
		fmt.Fprintf(stdout, "%s\n", t)
	}
	fmt.Fprintf(stdout, "%4s  %-10s  %-8s  %-9s  %-10s  %-24s  %-9s  %s\n", "#", "run", "status", "sigma", "epsilon", "accountant, delta", "sens", strings.Join(g.Varied, "  "))
	mechs := map[string]bool{}
	var mechList []string
	failed := 0
	warned := map[string]bool{} // strategy cache warnings, once each
	for _, p := range points {
		status := "todo"
		if _, ok := experiments.Finished(out, p); ok {
			status = "done"
		}
		plan, err := experiments.NewAccount(ctx, p.Config, env)
		if err != nil {
			failed++
			fmt.Fprintf(stdout, "%4d  %-10s  %-8s  error: %s\n", p.Index+1, p.ID, status, oneLine(err))
			continue
		}
		for _, w := range plan.Warnings {
			if !warned[w] {
				warned[w] = true
				fmt.Fprintf(stderr, "dpfl grid: warning: %s\n", w)
			}
		}
		r := plan.Report()
		eps, sigma, acct := "inf", "0", "none (no noise)"
		if r.Epsilon != nil {
			acct = results.EpsilonLabel(r.Accountant, r.Delta, false)
			eps, sigma = fmt.Sprintf("%.4g", *r.Epsilon), fmt.Sprintf("%.5g", r.NoiseMultiplier)
			if r.PopulationScale > 1 { // this run's clients, then the scaled population's
				eps += fmt.Sprintf(" (×%g: %.4g)", r.PopulationScale, *r.PopulationEpsilon)
			}
		}
		fmt.Fprintf(stdout, "%4d  %-10s  %-8s  %-9s  %-10s  %-24s  %-9.4g  %s\n", p.Index+1, p.ID, status, sigma, eps, acct, r.Sensitivity, strings.Join(p.Values, "  "))
		if r.Strategy != "" { // a correlated-noise mechanism
			m := fmt.Sprintf("%s n=%d for %s: sensitivity %.4g", r.Strategy, r.Steps, r.Schema, r.Sensitivity)
			if !mechs[m] {
				mechs[m] = true
				mechList = append(mechList, m)
			}
		}
	}
	if len(mechList) > 0 {
		slices.Sort(mechList)
		fmt.Fprintln(stdout, "mechanisms (optimized once, then read from the strategy cache):")
		for _, m := range mechList {
			fmt.Fprintln(stdout, "  "+m)
		}
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "dpfl grid: %d points cannot be planned\n", failed)
		return exitFailure
	}
	return exitOK
}

// gridDisplay shows a grid-level bar (points done of total, ETA) above one
// bar per running point. On a terminal it redraws in place; otherwise it
// prints one line per started and finished point.
type gridDisplay struct {
	w       io.Writer
	tty     bool
	g       *experiments.Grid
	total   int // points in the shard
	done    int
	rounds  int // rounds of the points still to run, in total
	trained int // rounds trained by this invocation
	start   time.Time
	running []*runLine
	drawn   int // lines drawn last time
	last    time.Time
	notices []string
	out     string // the grid's folder (for the points' checkpoints)
}

type runLine struct {
	p      experiments.Point
	round  int
	acc    float64
	start  time.Time
	first  int // round the point started (or resumed) at
	rounds int
}

func newGridDisplay(w io.Writer, g *experiments.Grid, points []experiments.Point, out string) *gridDisplay {
	d := &gridDisplay{w: w, g: g, total: len(points), start: time.Now(), out: out}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb" {
			d.tty = true
		}
	}
	for _, p := range points {
		if _, ok := experiments.Finished(out, p); ok {
			d.done++
		} else {
			d.rounds += p.Config.Rounds
		}
	}
	return d
}

// Write receives the grid's one-line notices.
func (d *gridDisplay) Write(b []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		d.notices = append(d.notices, l)
	}
	d.draw(true)
	return len(b), nil
}

// Start implements experiments.GridEvents.
func (d *gridDisplay) Start(p experiments.Point) {
	d.running = append(d.running, &runLine{p: p, start: time.Now(), rounds: p.Config.Rounds, first: -1})
	if !d.tty {
		fmt.Fprintf(d.w, "start  %s  %s\n", p.ID, p.Label(d.g.Varied))
	}
	d.draw(true)
}

// Round implements experiments.GridEvents.
func (d *gridDisplay) Round(p experiments.Point, round int, acc float64) {
	for _, r := range d.running {
		if r.p.ID == p.ID {
			if r.first < 0 {
				r.first = round - 1
				d.rounds -= r.first // resumed rounds are not trained again
			}
			r.round, r.acc = round, acc
		}
	}
	d.trained++
	d.draw(false)
}

// Done implements experiments.GridEvents.
func (d *gridDisplay) Done(p experiments.Point, s *results.Summary, err error) {
	d.running = slices.DeleteFunc(d.running, func(r *runLine) bool { return r.p.ID == p.ID })
	var msg string
	switch {
	case s != nil:
		d.done++
		msg = fmt.Sprintf("%-8s %s  acc %.4f  %s", s.Status, p.ID, s.FinalAccuracy, p.Label(d.g.Varied))
	case err != nil && errors.Is(err, context.Canceled) && experiments.HasCheckpoint(d.out, p):
		msg = fmt.Sprintf("stopped  %s  (checkpoint saved)", p.ID)
	case err != nil && errors.Is(err, context.Canceled):
		msg = fmt.Sprintf("stopped  %s  (no checkpoint: it starts over when rerun)", p.ID)
	case errors.Is(err, results.ErrLocked):
		msg = fmt.Sprintf("elsewhere %s  another process is running it: %s", p.ID, oneLine(err))
	default:
		d.done++
		msg = fmt.Sprintf("FAILED   %s  %s: %s", p.ID, p.Label(d.g.Varied), oneLine(err))
	}
	d.notices = append(d.notices, msg)
	d.draw(true)
}

func (d *gridDisplay) finish() { d.draw(true) }

func bar(frac float64, width int) string {
	frac = max(0, min(1, frac))
	n := int(frac*float64(width) + 0.5)
	return "[" + strings.Repeat("=", n) + strings.Repeat(" ", width-n) + "]"
}

func (d *gridDisplay) draw(force bool) {
	if !d.tty {
		for _, n := range d.notices {
			fmt.Fprintln(d.w, n)
		}
		d.notices = d.notices[:0]
		return
	}
	if !force && time.Since(d.last) < 150*time.Millisecond {
		return
	}
	d.last = time.Now()
	var b strings.Builder
	if d.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", d.drawn) // back to the top of the block
	}
	for _, n := range d.notices {
		b.WriteString("\r\x1b[K" + n + "\n")
	}
	d.notices = d.notices[:0]
	eta := "?"
	if d.trained > 0 && d.rounds > 0 {
		el := time.Since(d.start)
		rem := time.Duration(float64(el) / float64(d.trained) * float64(max(0, d.rounds-d.trained)))
		eta = rem.Round(time.Second).String()
	}
	frac := float64(d.done) / float64(max(1, d.total))
	fmt.Fprintf(&b, "\r\x1b[Kgrid %s %s %d/%d points  elapsed %s  ETA %s\n", d.g.Name, bar(frac, 30), d.done, d.total,
		time.Since(d.start).Round(time.Second), eta)
	for _, r := range d.running {
		fmt.Fprintf(&b, "\r\x1b[K  %s %s %d/%d rounds  acc %.4f  %s\n", r.p.ID, bar(float64(r.round)/float64(r.rounds), 20), r.round, r.rounds, r.acc,
			truncate(r.p.Label(d.g.Varied), 60))
	}
	b.WriteString("\x1b[J") // clear lines left from a longer block
	d.drawn = 1 + len(d.running)
	io.WriteString(d.w, b.String())
}

func truncate(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
