package experiments

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"dpfl/privacy"
	"dpfl/results"
	"dpfl/sim"
)

// RoundReport is what a run reports after each round (Options.AfterRound).
type RoundReport struct {
	Round, Rounds int     // rounds done, of the run's
	Resumed       int     // the round the run resumed after (0: from the start)
	Accuracy      float64 // latest test accuracy (0 before the first evaluation)
	// Evaluated is set on the rounds evaluated; Epsilon is then the epsilon
	// spent through the round (+Inf without noise), labelled EpsilonLabel
	// (accountant, delta, and whether it is the whole run's; see
	// results.EpsilonLabel).
	Evaluated    bool
	Epsilon      float64
	EpsilonLabel string
}

// recorder writes a run's records while it trains: metrics.csv after every
// evaluation, the checkpoint, and at the end summary.json.
type recorder struct {
	p        *Plan
	rd       *runDir
	opts     Options
	metrics  *results.Metrics
	ckpt     string // checkpoint path
	resumed  *sim.State
	prevWall float64 // wall time of the run before it resumed
	start    time.Time
	epsLabel string
	lastAcc  float64
	aud      *auditor // nil: no audit
	err      error    // the first error of the round hook
}

// newRecorder prepares the records of a run: it resumes from the
// checkpoint when its metrics check out (setting spec.Resume), and adds the
// run's callbacks to the spec: the auditor's, its own, and checkpoints.
func (p *Plan) newRecorder(rd *runDir, opts Options, spec *sim.Spec, aud *auditor) (*recorder, error) {
	cfg, acc := p.Config, &p.Privacy
	r := &recorder{p: p, rd: rd, opts: opts, metrics: results.NewMetrics(filepath.Join(rd.dir, "metrics.csv")),
		ckpt: filepath.Join(rd.dir, CheckpointFile), aud: aud}
	epsMethod := ""
	if acc.Private {
		epsMethod = acc.Final.Method
		r.metrics.SetEpsilon(results.EpsilonInfo{Accountant: epsMethod, Delta: cfg.Privacy.Delta,
			Adjacency: acc.Final.Adjacency.String(), WholeRun: acc.WholeRun})
	}
	r.metrics.SetRun(rd.id, cfg.Seed)
	r.epsLabel = results.EpsilonLabel(epsMethod, cfg.Privacy.Delta, acc.WholeRun)
	if cfg.Aggregator.Adaptive() {
		r.metrics.SetClipNormColumn()
	}
	r.resume()
	if r.resumed == nil {
		r.metrics.Keep(nil)
		if err := r.metrics.Flush(); err != nil {
			return nil, err
		}
	} else {
		spec.Resume, r.lastAcc = r.resumed, r.resumed.FinalAcc
	}
	r.start = time.Now()
	var ck *sim.Checkpoints
	if opts.CheckpointEvery >= 0 && !cfg.AGD() { // dp-agd's ledger and budgets are not checkpointed: it reruns from the start
		every := opts.CheckpointEvery
		if every == 0 {
			every = cfg.Eval.Every
		}
		ck = &sim.Checkpoints{Every: every, Save: r.checkpoint}
	}
	// The audit's statistics of a round, then its records, then the
	// checkpoint that covers both.
	if aud != nil {
		spec.Callbacks = append(spec.Callbacks, aud)
	}
	spec.Callbacks = append(spec.Callbacks, r)
	if ck != nil {
		spec.Callbacks = append(spec.Callbacks, ck)
	}
	return r, nil
}

// resume takes the checkpoint, if there is one whose metrics rows check
// out, keeping those rows.
func (r *recorder) resume() {
	cfg, dir := r.p.Config, r.rd.dir
	ck := loadCheckpoint(r.ckpt, r.rd.id, cfg.Model.NumParams(r.p.Data.Train.Dim, r.p.Data.Train.Classes), r.opts.Log)
	if ck == nil {
		return
	}
	rows, err := results.ReadMetrics(filepath.Join(dir, "metrics.csv"))
	var keep []results.MetricsRow
	for _, row := range rows {
		if row.Round <= ck.Round {
			keep = append(keep, row)
		}
	}
	if err == nil {
		err = checkEvalRows(keep, ck.Round, cfg.Eval.Every, cfg.Rounds)
	}
	if err != nil {
		// The rows before the checkpoint cannot be redone from it: start
		// over rather than finish with rows missing.
		logf(r.opts.Log, "%s: checkpoint after round %d ignored, metrics.csv does not match it (%v): starting over", dir, ck.Round, err)
		return
	}
	if r.aud != nil && !r.aud.load(dir, ck.Round) {
		// The audit's every-round statistics cover the rounds before the
		// checkpoint and cannot be redone from it.
		logf(r.opts.Log, "%s: checkpoint after round %d ignored, %s does not match it: starting over", dir, ck.Round, auditStateFile)
		return
	}
	r.metrics.Keep(keep)
	r.resumed = &sim.State{Round: ck.Round, Params: ck.Params, Momentum: ck.Momentum, AggState: ck.Aggregator, FinalLoss: ck.FinalLoss, FinalAcc: ck.FinalAcc, BestAcc: ck.BestAcc}
	r.prevWall = ck.WallSeconds
	logf(r.opts.Log, "%s: resuming after round %d of %d", dir, ck.Round, cfg.Rounds)
}

// checkpoint saves the simulation's state (sim.Checkpoints.Save).
func (r *recorder) checkpoint(st sim.State) error {
	if r.aud != nil {
		// First the statistics, then the checkpoint that refers to them.
		if err := r.aud.save(r.rd.dir); err != nil {
			return err
		}
	}
	return results.WriteCheckpoint(r.ckpt, &results.Checkpoint{RunID: r.rd.id, Round: st.Round, Params: st.Params, Momentum: st.Momentum, Aggregator: st.AggState,
		FinalLoss: st.FinalLoss, FinalAcc: st.FinalAcc, BestAcc: st.BestAcc, WallSeconds: r.prevWall + time.Since(r.start).Seconds()})
}

// AfterRound is the recorder as a sim.Callback (round); its errors are
// kept for the end of the run (recorder.err).
func (r *recorder) AfterRound(rd sim.Round, _ func() sim.State) error {
	r.round(rd)
	return nil
}

// Interrupted implements sim.Callback: the rows are written as they come.
func (r *recorder) Interrupted(sim.State) error { return nil }

// round records a finished round: an evaluated round's metrics row with
// the epsilon spent so far, then the report (Options.AfterRound: the
// progress bar).
func (r *recorder) round(rd sim.Round) {
	cfg := r.p.Config
	rep := RoundReport{Round: rd.Round, Rounds: cfg.Rounds, Evaluated: rd.Evaluated}
	if r.resumed != nil {
		rep.Resumed = r.resumed.Round
	}
	if rd.Evaluated {
		eps, err := r.p.Privacy.EpsilonThrough(rd.Round-1, cfg.Privacy.Delta)
		if err != nil && r.err == nil {
			r.err = err
		}
		r.metrics.Add(results.MetricsRow{Round: rd.Round, TrainLoss: rd.TrainLoss, TestLoss: rd.TestLoss, TestAccuracy: rd.TestAcc,
			Epsilon: eps, Cohort: rd.Cohort, ClipFraction: rd.Report.ClipFraction(), NoiseNorm: rd.Report.NoiseNorm, ClipNorm: rd.Report.ClipNorm})
		if err := r.metrics.Flush(); err != nil && r.err == nil {
			r.err = err
		}
		r.lastAcc = rd.TestAcc
		rep.Epsilon, rep.EpsilonLabel = eps, r.epsLabel
	}
	rep.Accuracy = r.lastAcc
	if r.opts.AfterRound != nil {
		r.opts.AfterRound(rep)
	}
}

// finish writes summary.json and removes the checkpoint.
func (r *recorder) finish(status string, sum sim.Summary, spec sim.Spec) (*Outcome, error) {
	dir := r.rd.dir
	out := r.p.Summary()
	out.RunID, out.Status, out.Rounds, out.Inputs = r.rd.id, status, sum.Rounds, r.rd.inputs
	out.FinalAccuracy, out.BestAccuracy, out.FinalTestLoss = sum.FinalAcc, sum.BestAcc, sum.FinalLoss
	if spec.Validation != nil {
		v := sum.FinalValAcc
		out.FinalValAccuracy = &v
	}
	if m, ok := spec.Data.MajorityAccuracy(); ok {
		out.MajorityAccuracy = &m
	}
	out.WallSeconds, out.Workers = r.prevWall+time.Since(r.start).Seconds(), spec.Workers
	if spec.Resume != nil {
		out.ResumedFrom = spec.Resume.Round
	}
	if t := spec.Trainable; t != nil {
		out.TrainedParams = t.Len()
	}
	if r.aud != nil && status == "complete" {
		// audit.json before summary.json: a complete audited run has it.
		rec, err := r.aud.finish(sum.Params, sum.Init, r.p.Config.Privacy.Delta)
		if err != nil {
			return nil, err
		}
		rec.ReportedEpsilon, rec.Accountant = out.Epsilon, out.EpsilonMethod
		if err := results.WriteJSON(filepath.Join(dir, AuditFile), rec); err != nil {
			return nil, err
		}
		out.Audit = &results.AuditSummary{ThreatModel: rec.ThreatModel}
		for _, e := range rec.Estimates {
			iv := results.AuditInterval{Epsilon: e.Epsilon, Low: e.Low, High: e.High, OneRun: results.Float(e.OneRun.Epsilon)}
			if e.ThreatModel == ThreatFinal {
				out.Audit.FinalModel = iv
			} else {
				out.Audit.EveryRound = iv
			}
		}
	}
	if g, ok := spec.Algorithm.(*sim.AGD); ok {
		a := g.AGD
		out.ZCDPBudget, out.ZCDPSpent = r.p.Privacy.AGDBudget, a.Ledger.Spent()
		// The schedule was planned for the most rounds; the budget ran
		// sum.Rounds of them.
		count := map[int]int{}
		out.MaxParticipations = 0
		for _, ids := range spec.Schedule.Rounds[:sum.Rounds] {
			for _, id := range ids {
				count[id]++
				out.MaxParticipations = max(out.MaxParticipations, count[id])
			}
		}
		if err := writeLedger(filepath.Join(dir, "ledger.csv"), a.Ledger); err != nil {
			return nil, err
		}
	}
	if status == "complete" {
		// The model file comes before summary.json, which marks the run
		// complete: a complete run always has its model.
		if err := r.p.writeModel(filepath.Join(dir, results.ModelFile), r.rd.id, sum); err != nil {
			return nil, err
		}
	}
	if err := results.WriteJSON(filepath.Join(dir, "summary.json"), out); err != nil {
		return nil, err
	}
	for _, f := range []string{r.ckpt, filepath.Join(dir, auditStateFile)} {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("experiments: %w", err)
		}
	}
	return &Outcome{Dir: dir, Summary: out}, nil
}

// writeLedger writes DP-AGD's expenses, one row per release: the round
// (1-based), what was released, its zCDP cost and the total after it.
func writeLedger(path string, l *privacy.Ledger) error {
	var rows [][]string
	total := 0.0
	for _, e := range l.Expenses() {
		total += e.Rho
		rows = append(rows, []string{strconv.Itoa(e.Round + 1), e.Label, strconv.FormatFloat(e.Rho, 'g', -1, 64), strconv.FormatFloat(total, 'g', -1, 64)})
	}
	return results.WriteCSV(path, []string{"round", "release", "rho", "rho_total"}, rows)
}
