package experiments

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"dpfl/results"

	"dpfl/datasets"
)

// GridOptions are the execution knobs of a grid: none changes a point's
// results.
type GridOptions struct {
	OutDir   string // the grid's folder: one run folder per point, index.csv, plots
	Parallel int    // points run at once (default 1)
	Workers  int    // client-training goroutines per point (default 1)
	// Shard and Shards select the points with index ≡ Shard (mod Shards);
	// Shards 0 or 1 runs them all.
	Shard, Shards int
	// CheckpointEvery is Options.CheckpointEvery for every point.
	CheckpointEvery int
	// Events, if not nil, receives progress (from several goroutines; calls
	// are serialized by RunGrid).
	Events GridEvents
	// Log receives one-line notices (resumed checkpoints); nil: none.
	Log io.Writer
	// Data and StrategyCache are Options.Data and Options.StrategyCache for
	// every point (share one loader: MNIST is decoded once).
	Data          *datasets.Loader
	StrategyCache string
}

// GridEvents observes a grid's progress.
type GridEvents interface {
	// Start is called when a point starts (or resumes).
	Start(p Point)
	// Round is called after each round of a running point.
	Round(p Point, round int, acc float64)
	// Done is called when a point ends; err is nil when it finished
	// (complete or diverged).
	Done(p Point, s *results.Summary, err error)
}

// GridResult says what a grid invocation did.
type GridResult struct {
	Points  int // points in this shard
	Skipped int // already finished before this invocation
	Ran     int // finished now
	Failed  int // ended with an error (see the run folder's error.txt)
	// Elsewhere counts the points another process was running (their
	// folders were locked); that process finishes them.
	Elsewhere int
	// NotChosen and Waiting count, under a tune: section, the points of
	// other seeds at settings their groups did not choose (never run), and
	// those whose groups still wait for tuning runs of another shard.
	NotChosen, Waiting int
	Index              string
}

// ErrorFile is written into a run folder when its point fails.
const ErrorFile = "error.txt"

// Finished reports whether the point's run folder under out holds a
// finished run of this point whose files check out (see runDir.finished).
func Finished(out string, p Point) (*results.Summary, bool) {
	rd := &runDir{dir: filepath.Join(out, p.Dir()), id: p.ID, inputs: p.Inputs}
	s, _ := rd.finished(p.Config)
	return s, s != nil
}

// HasCheckpoint reports whether the point's run folder under out holds a
// checkpoint to resume from.
func HasCheckpoint(out string, p Point) bool {
	fi, err := os.Stat(filepath.Join(out, p.Dir(), CheckpointFile))
	return err == nil && fi.Mode().IsRegular()
}

// RunGrid runs the grid's points (those of the selected shard), skipping
// finished ones and resuming interrupted ones from their checkpoints, then
// writes index.csv over every point of the grid found under OutDir. A failing
// point does not stop the others; the returned error lists the failures.
// When ctx is cancelled, running points save checkpoints and RunGrid returns
// ctx's error after writing the index.
func RunGrid(ctx context.Context, g *Grid, opts GridOptions) (*GridResult, error) {
	if opts.Data == nil {
		opts.Data = new(datasets.Loader) // one for every point
	}
	points := g.Points
	if opts.Shards > 1 {
		var err error
		if points, err = g.Shard(opts.Shard, opts.Shards); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	r := &gridRunner{
		ctx: ctx, g: g, opts: opts,
		res:   &GridResult{Points: len(points)},
		index: filepath.Join(opts.OutDir, "index.csv"),
	}
	tried := 0
	if g.Tune == nil {
		tried = r.run(points)
	} else {
		tried = r.runTuned(points)
	}
	var errs []error
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	if len(r.failures) > 0 {
		errs = append(errs, fmt.Errorf("experiments: %d of %d points failed:\n%w", len(r.failures), tried, errors.Join(r.failures...)))
	}
	if err := WriteIndex(r.index, g, opts.OutDir); err != nil {
		errs = append(errs, err, r.indexErr)
	} else {
		r.res.Index = r.index
	}
	return r.res, errors.Join(errs...)
}

// gridRunner is one RunGrid call's state: what its workers share.
type gridRunner struct {
	ctx   context.Context
	g     *Grid
	opts  GridOptions
	index string // the grid's index.csv

	mu       sync.Mutex // serializes events and the fields below
	res      *GridResult
	failures []error
	indexErr error // the first failed per-point index write
}

// runTuned runs a tuned grid's points group by group (a group: the points
// that differ only in the tuned keys and the seed): the tuning seeds' points
// in the order of their groups, and each group's other seeds at the chosen
// setting as soon as its tuning runs have all finished, before the next
// groups' tuning, so that a grid stopped part way has whole series done.
// Groups still waiting for another shard's tuning runs are left for a later
// invocation. It returns the number of points tried.
func (r *gridRunner) runTuned(points []Point) (tried int) {
	var stage1 []Point
	rest := map[string][]Point{} // the other seeds' points, by group
	rank := map[string]int{}     // groups in the order of their first point
	var order []string
	for _, p := range points {
		group, _, tuning := r.g.tuneRole(p)
		if _, ok := rank[group]; !ok {
			rank[group] = len(order)
			order = append(order, group)
		}
		if tuning {
			stage1 = append(stage1, p)
		} else {
			rest[group] = append(rest[group], p)
		}
	}
	slices.SortStableFunc(stage1, func(a, b Point) int {
		ga, _, _ := r.g.tuneRole(a)
		gb, _, _ := r.g.tuneRole(b)
		return cmp.Compare(rank[ga], rank[gb])
	})
	// chosen returns the chosen points of the groups whose tuning has
	// ended since the last call.
	chosen := func() []Point {
		if len(rest) == 0 {
			return nil
		}
		choices := r.g.Choices(r.opts.OutDir)
		var ready []Point
		for _, group := range order {
			ps, waiting := rest[group]
			if _, ok := choices[group]; !waiting || !ok {
				continue
			}
			delete(rest, group)
			for _, p := range ps {
				switch r.g.Stage(p, choices) {
				case StageChosen:
					ready = append(ready, p)
				case StageNotChosen:
					r.mu.Lock()
					r.res.NotChosen++
					r.mu.Unlock()
				}
			}
		}
		return ready
	}
	tried = r.runQueue(append(chosen(), stage1...), chosen)
	for _, ps := range rest {
		r.res.Waiting += len(ps)
	}
	return tried
}

// run runs the unfinished points of ps, opts.Parallel at once, and returns
// how many it tried.
func (r *gridRunner) run(ps []Point) (tried int) {
	return r.runQueue(ps, nil)
}

// runQueue runs the unfinished points of ps in order, opts.Parallel at
// once; after each point ends, more (if not nil) returns points to run
// before the rest of the queue. It returns the number of points started.
// On a stop (the context's end) the points not started stay pending.
func (r *gridRunner) runQueue(ps []Point, more func() []Point) (tried int) {
	var mu sync.Mutex // guards queue, running and tried
	cond := sync.NewCond(&mu)
	queue := r.unfinished(ps)
	running := 0
	var wg sync.WaitGroup
	for w := 0; w < max(1, r.opts.Parallel); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			for {
				// An idle worker waits while a running point may still
				// release more.
				for len(queue) == 0 && running > 0 && more != nil && r.ctx.Err() == nil {
					cond.Wait()
				}
				if len(queue) == 0 || r.ctx.Err() != nil {
					cond.Broadcast()
					return
				}
				p := queue[0]
				queue = queue[1:]
				running++
				tried++
				mu.Unlock()
				r.runOne(p)
				mu.Lock()
				running--
				if more != nil && r.ctx.Err() == nil {
					queue = append(r.unfinished(more()), queue...)
				}
				cond.Broadcast()
			}
		}()
	}
	wg.Wait()
	return tried
}

// unfinished returns the points of ps not finished yet, counting the others
// as skipped.
func (r *gridRunner) unfinished(ps []Point) []Point {
	var todo []Point
	for _, p := range ps {
		if _, ok := Finished(r.opts.OutDir, p); ok {
			r.mu.Lock()
			r.res.Skipped++
			r.mu.Unlock()
		} else {
			todo = append(todo, p)
		}
	}
	return todo
}

// runOne runs p, reporting its start and rounds to the events.
func (r *gridRunner) runOne(p Point) {
	ev := r.opts.Events
	if ev != nil {
		r.mu.Lock()
		ev.Start(p)
		r.mu.Unlock()
	}
	out, err := runPoint(r.ctx, r.g, p, r.opts, func(rep RoundReport) {
		if ev != nil {
			r.mu.Lock()
			ev.Round(p, rep.Round, rep.Accuracy)
			r.mu.Unlock()
		}
	})
	r.done(p, out, err)
}

// done records a point's outcome, rewrites the index and reports the
// point's end to the events.
func (r *gridRunner) done(p Point, out *Outcome, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var sum *results.Summary
	switch {
	case err == nil && out.AlreadyComplete:
		r.res.Skipped++ // finished by another process meanwhile
		sum = &out.Summary
	case err == nil:
		r.res.Ran++
		sum = &out.Summary
	case errors.Is(err, results.ErrLocked):
		r.res.Elsewhere++
	case r.ctx.Err() != nil:
	default:
		r.res.Failed++
		r.failures = append(r.failures, fmt.Errorf("point %d (%s): %w", p.Index+1, p.Label(r.g.Varied), err))
	}
	// Keep index.csv current, so a grid killed outright (no chance to
	// write it at the end) still lists what finished.
	if ierr := WriteIndex(r.index, r.g, r.opts.OutDir); ierr != nil && r.indexErr == nil {
		r.indexErr = ierr
	}
	if ev := r.opts.Events; ev != nil {
		ev.Done(p, sum, err)
	}
}

// runPoint runs one point, recording a failure in its folder.
func runPoint(ctx context.Context, g *Grid, p Point, opts GridOptions, after func(RoundReport)) (*Outcome, error) {
	return Run(ctx, p.Config, Options{
		BaseDir: filepath.Dir(g.File), OutDir: opts.OutDir, Workers: max(1, opts.Workers),
		CheckpointEvery: opts.CheckpointEvery, AfterRound: after, Log: opts.Log, RecordFailure: true,
		Data: opts.Data, StrategyCache: opts.StrategyCache,
	})
}

// WriteIndex writes index.csv: one row per grid point, in expansion order,
// with its status (complete, diverged, interrupted, failed, pending, or under
// a tune: section not-chosen: another seed's point at a setting its group
// did not choose, which never runs; or waiting: another seed's point whose
// group has not chosen yet, which runs only if its setting is chosen), its
// varied values and, when finished, its results (columns:
// results.IndexFixedColumns, those of results.IndexOptionalColumns some row
// has, then the varied paths). A point is read from its run folder under
// out, so shards writing to one folder produce the same index.
func WriteIndex(path string, g *Grid, out string) error {
	sums := make([]*results.Summary, len(g.Points)) // each run folder read once
	for i, p := range g.Points {
		sums[i], _ = Finished(out, p)
	}
	choices := g.choices(func(p Point) (*results.Summary, bool) { return sums[p.Index], sums[p.Index] != nil })
	cells := make([]map[string]string, len(g.Points))
	for i, p := range g.Points {
		cells[i] = indexRow(p, sums[i], out)
		if cells[i]["status"] == "" {
			switch st := g.Stage(p, choices); st {
			case StageNotChosen, StageWaiting:
				// tune: its group chose another setting, or has not chosen yet
				cells[i]["status"] = st
			default:
				cells[i]["status"] = "pending"
			}
		}
	}
	// A varied path that is also a column (seed, aggregator.kind) appears
	// once; an optional column only when some row has it.
	header := append([]string{}, results.IndexFixedColumns...)
	for _, c := range results.IndexOptionalColumns {
		if slices.ContainsFunc(cells, func(r map[string]string) bool { return r[c] != "" }) {
			header = append(header, c)
		}
	}
	var extra []int
	for i, v := range g.Varied {
		if !results.IsIndexColumn(v) {
			header = append(header, v)
			extra = append(extra, i)
		}
	}
	rows := make([][]string, 0, len(g.Points))
	for i, p := range g.Points {
		rec := make([]string, 0, len(header))
		for _, h := range header[:len(header)-len(extra)] {
			rec = append(rec, cells[i][h])
		}
		for _, j := range extra {
			rec = append(rec, p.Cell(j))
		}
		rows = append(rows, rec)
	}
	return results.WriteCSV(path, header, rows)
}

// indexRow is a point's index.csv cells by column, without its varied
// values; status is empty for a point neither finished, failed nor
// interrupted.
func indexRow(p Point, s *results.Summary, out string) map[string]string {
	c := p.Config
	row := map[string]string{
		"run_id": p.ID, "dir": p.Dir(), "aggregator.kind": c.Aggregator.Kind, "participation.kind": string(c.Participation.Kind),
		"seed": strconv.FormatUint(c.Seed, 10), "delta": fmtFloat(c.Privacy.Delta),
	}
	dir := filepath.Join(out, p.Dir())
	if s == nil {
		if _, err := os.Stat(filepath.Join(dir, ErrorFile)); err == nil {
			row["status"] = "failed"
		} else if _, err := os.Stat(filepath.Join(dir, CheckpointFile)); err == nil {
			row["status"] = "interrupted"
		}
		return row
	}
	row["status"] = s.Status
	row["epsilon"] = "inf"
	if s.Epsilon != nil {
		row["epsilon"] = fmtFloat(*s.Epsilon)
		// The method without the RDP order ("rdp-cks (order 9)").
		row["accountant"], _, _ = strings.Cut(s.EpsilonMethod, " (")
		if m, err := results.ReadMetricsTable(filepath.Join(dir, "metrics.csv")); err == nil && len(m.Rows) > 0 {
			row["adjacency"] = m.Get(0, "adjacency")
		}
	}
	row["noise_multiplier"] = fmtFloat(s.NoiseMultiplier)
	row["sensitivity"] = fmtFloat(s.Sensitivity)
	row["final_accuracy"] = fmtFloat(s.FinalAccuracy)
	row["best_accuracy"] = fmtFloat(s.BestAccuracy)
	row["final_test_loss"] = fmtFloat(s.FinalTestLoss)
	row["rounds"] = strconv.Itoa(s.Rounds)
	row["wall_seconds"] = strconv.FormatFloat(s.WallSeconds, 'f', 1, 64)
	for col, v := range map[string]*float64{"population_epsilon": s.PopulationEpsilon,
		"final_val_accuracy": s.FinalValAccuracy, "majority_accuracy": s.MajorityAccuracy} {
		if v != nil {
			row[col] = fmtFloat(*v)
		}
	}
	if a := s.Audit; a != nil {
		for name, e := range map[string]results.AuditInterval{"final": a.FinalModel, "rounds": a.EveryRound} {
			row["audit_"+name+"_epsilon"] = fmtFloat(float64(e.Epsilon))
			row["audit_"+name+"_low"] = fmtFloat(float64(e.Low))
			row["audit_"+name+"_high"] = fmtFloat(float64(e.High))
		}
	}
	return row
}

func fmtFloat(x float64) string {
	if math.IsInf(x, 1) {
		return "inf"
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}
