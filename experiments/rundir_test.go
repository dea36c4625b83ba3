package experiments

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"dpfl/datasets"
	"dpfl/results"
)

// folderRun is a short DP-FedAvg run on real MNIST (8 rounds, evaluated
// every 3 and after the last).
const folderRun = `name: folder
seed: 9
rounds: 8
data: {dataset: mnist, clients: 1000}
model: {kind: logreg}
client: {batch_size: 5, lr: 0.2}
participation: {cohort: 100}
aggregator: {clip: 1, noise_multiplier: 0.5}
privacy: {delta: 1.0e-5}
server: {lr: 0.5}
eval: {every: 3}
`

func loadRun(t *testing.T, yml string) *Config {
	t.Helper()
	cfg, _, err := Load([]byte(yml), "run.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// snapshot is every file of a folder with its content and modification time.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		st, _ := os.Stat(filepath.Join(dir, e.Name()))
		out[e.Name()] = st.ModTime().String() + "\n" + string(b)
	}
	return out
}

func sameSnapshot(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestFinishedRunIsNotRewritten: running a complete run again trains
// nothing and touches no file; a complete run whose files disagree (metrics
// cut to the header, as a killed rewrite used to leave it; another run's
// summary or metrics; config.yaml a FIFO, which must not block the check;
// its model deleted, truncated, or another run's) is
// not trusted, by Run and by a grid's Finished alike: it is reported and
// run again, ending with the same metrics and model as the first time.
func TestFinishedRunIsNotRewritten(t *testing.T) {
	t.Parallel()
	// folderRun at a fifth of the clients, the MNIST files read once: the
	// run is trained eleven times.
	small := strings.NewReplacer("clients: 1000", "clients: 200", "cohort: 100", "cohort: 20").Replace(folderRun)
	cfg := loadRun(t, small)
	out := t.TempDir()
	data := new(datasets.Loader)
	first, err := Run(context.Background(), cfg, Options{OutDir: out, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	if first.AlreadyComplete {
		t.Fatal("a fresh run says it was already complete")
	}
	wantMetrics, _ := os.ReadFile(filepath.Join(first.Dir, "metrics.csv"))
	wantModel, _ := os.ReadFile(filepath.Join(first.Dir, results.ModelFile))
	// Another seed's run: same rounds and evaluations, other numbers.
	other, err := Run(context.Background(), loadRun(t, strings.Replace(small, "seed: 9", "seed: 10", 1)), Options{OutDir: out, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, first.Dir)
	time.Sleep(10 * time.Millisecond) // a rewrite would change modification times

	rounds := 0
	again, err := Run(context.Background(), cfg, Options{OutDir: out, Data: data, AfterRound: func(RoundReport) { rounds++ }})
	if err != nil {
		t.Fatal(err)
	}
	if !again.AlreadyComplete || rounds != 0 || again.Summary.FinalAccuracy != first.Summary.FinalAccuracy {
		t.Fatalf("second run: already complete %v, %d rounds trained; want true and 0", again.AlreadyComplete, rounds)
	}
	if !sameSnapshot(before, snapshot(t, first.Dir)) {
		t.Fatal("running a complete run again changed its folder")
	}

	p := Point{ID: filepath.Base(first.Dir)[len(cfg.Name)+1:], Config: cfg}
	if _, ok := Finished(out, p); !ok {
		t.Fatal("Finished does not recognize the complete run")
	}
	damage := map[string]func(dir string){
		"metrics cut to its header": func(dir string) {
			os.WriteFile(filepath.Join(dir, "metrics.csv"), []byte(strings.Join(results.MetricsHeader, ",")+"\n"), 0o644)
		},
		"metrics missing a row": func(dir string) {
			lines := strings.SplitAfter(string(wantMetrics), "\n")
			os.WriteFile(filepath.Join(dir, "metrics.csv"), []byte(strings.Join(lines[:2], "")+strings.Join(lines[3:], "")), 0o644)
		},
		"summary of another run": func(dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
			os.WriteFile(filepath.Join(dir, "summary.json"), bytes.Replace(b, []byte(p.ID), []byte("0123456789"), 1), 0o644)
		},
		"metrics.csv of another run": func(dir string) {
			b, _ := os.ReadFile(filepath.Join(other.Dir, "metrics.csv"))
			os.WriteFile(filepath.Join(dir, "metrics.csv"), b, 0o644)
		},
		"model deleted": func(dir string) { os.Remove(filepath.Join(dir, results.ModelFile)) },
		"model truncated": func(dir string) {
			os.WriteFile(filepath.Join(dir, results.ModelFile), wantModel[:len(wantModel)-4], 0o644)
		},
		"model of another run": func(dir string) {
			b, _ := os.ReadFile(filepath.Join(other.Dir, results.ModelFile))
			os.WriteFile(filepath.Join(dir, results.ModelFile), b, 0o644)
		},
		"config.yaml a FIFO": func(dir string) {
			os.Remove(filepath.Join(dir, "config.yaml"))
			if err := mkfifo(filepath.Join(dir, "config.yaml")); err != nil {
				t.Logf("config.yaml as a FIFO not tried: %v", err)
				os.WriteFile(filepath.Join(dir, "config.yaml"), nil, 0o644)
			}
		},
		"config.yaml of another configuration": func(dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, "config.yaml"))
			os.WriteFile(filepath.Join(dir, "config.yaml"), bytes.Replace(b, []byte("seed: 9"), []byte("seed: 10"), 1), 0o644)
		},
	}
	for name, f := range damage {
		f(first.Dir)
		if _, ok := Finished(out, p); ok {
			t.Errorf("%s: Finished still trusts the run", name)
		}
		var log bytes.Buffer
		res, err := Run(context.Background(), cfg, Options{OutDir: out, Data: data, Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		if res.AlreadyComplete || !strings.Contains(log.String(), "not complete after all") {
			t.Errorf("%s: rerun says already complete %v, log %q; want a rerun with a notice", name, res.AlreadyComplete, log.String())
		}
		if got, _ := os.ReadFile(filepath.Join(res.Dir, "metrics.csv")); !bytes.Equal(got, wantMetrics) {
			t.Errorf("%s: metrics after the rerun differ from the first run's:\n%s", name, got)
		}
		if got, _ := os.ReadFile(filepath.Join(res.Dir, results.ModelFile)); !bytes.Equal(got, wantModel) {
			t.Errorf("%s: the model after the rerun differs from the first run's", name)
		}
		if _, ok := Finished(out, p); !ok {
			t.Errorf("%s: Finished does not trust the rerun", name)
		}
	}
	// A published copy of the record (config.yaml, metrics.csv,
	// summary.json, as results/paper commits runs) is trusted without its
	// model; without participation.json but with a broken model, it is not.
	os.Remove(filepath.Join(first.Dir, "participation.json"))
	os.WriteFile(filepath.Join(first.Dir, results.ModelFile), wantModel[:100], 0o644)
	if _, ok := Finished(out, p); ok {
		t.Error("a truncated model is trusted once participation.json is gone")
	}
	os.Remove(filepath.Join(first.Dir, results.ModelFile))
	if _, ok := Finished(out, p); !ok {
		t.Error("a published copy of the record (no model, no participation.json) is not trusted")
	}
}

// TestCommittedRunsFinished: a committed run of each reproduction under
// results/paper (a published copy: no model file) is a finished run of its
// configuration, so a grid over the folder reruns nothing and its index
// re-renders as committed.
func TestCommittedRunsFinished(t *testing.T) {
	grids, err := filepath.Glob(filepath.Join("..", "results", "paper", "*", "index.csv"))
	if err != nil || len(grids) == 0 {
		t.Fatalf("no committed grids (%v)", err)
	}
	for _, idx := range grids {
		runs, _ := filepath.Glob(filepath.Join(filepath.Dir(idx), "*", "summary.json"))
		if len(runs) == 0 {
			continue
		}
		dir := filepath.Dir(runs[0])
		b, err := os.ReadFile(filepath.Join(dir, "config.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		cfg, _, err := Load(b, "config.yaml")
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		s, err := results.ReadSummary(runs[0])
		if err != nil {
			t.Fatal(err)
		}
		p := Point{ID: s.RunID, Config: cfg, Inputs: s.Inputs}
		if p.Dir() != filepath.Base(dir) {
			t.Fatalf("%s: point folder %s", dir, p.Dir())
		}
		if _, ok := Finished(filepath.Dir(dir), p); !ok {
			rd := &runDir{dir: dir, id: p.ID, inputs: p.Inputs}
			_, why := rd.finished(cfg)
			t.Errorf("%s: not finished: %v", dir, why)
		}
	}
}

// TestRunFolderIsOwnedByOneProcess: while another owner holds the folder's
// lock, Run refuses and writes nothing; when the owner is gone, it runs.
func TestRunFolderIsOwnedByOneProcess(t *testing.T) {
	cfg := loadRun(t, folderRun)
	out := t.TempDir()
	rd, err := identify(cfg, Options{OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	lock, err := results.Lock(rd.dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), cfg, Options{OutDir: out})
	if !errors.Is(err, results.ErrLocked) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("run of a locked folder: %v; want ErrLocked naming the owner", err)
	}
	if ents, _ := os.ReadDir(rd.dir); len(ents) != 1 {
		t.Fatalf("a refused run left %d files (want only %s)", len(ents), results.LockFile)
	}
	lock.Unlock()
	if _, err := Run(context.Background(), cfg, Options{OutDir: out}); err != nil {
		t.Fatalf("after the owner released the folder: %v", err)
	}
}

// TestGridTwoProcessesSameShard: two grid invocations on the same folder at
// once (a resubmitted array task) train every point exactly once between
// them; a third, after a point's model file is deleted, trains that point
// again.
func TestGridTwoProcessesSameShard(t *testing.T) {
	t.Parallel()
	g := smallGrid(t, t.TempDir())
	out := t.TempDir()
	var wg sync.WaitGroup
	res := make([]*GridResult, 2)
	ev := []*countEvents{{}, {}}
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if res[i], err = RunGrid(context.Background(), g, GridOptions{OutDir: out, Parallel: 1, Events: ev[i]}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	ran := res[0].Ran + res[1].Ran
	trained := ev[0].rounds + ev[1].rounds
	if ran != len(g.Points) || trained != len(g.Points)*6 {
		t.Errorf("two invocations ran %d points and %d rounds (results %+v %+v); want each of the %d points once (%d rounds)",
			ran, trained, *res[0], *res[1], len(g.Points), len(g.Points)*6)
	}
	idx, _ := os.ReadFile(filepath.Join(out, "index.csv"))
	if strings.Count(string(idx), ",complete,") != len(g.Points) {
		t.Errorf("index after both invocations:\n%s", idx)
	}
	// A point whose model file is deleted is rerun by the grid (the same
	// completion check as dpfl run's), to the same model.
	model := filepath.Join(out, g.Points[1].Dir(), results.ModelFile)
	want, _ := os.ReadFile(model)
	os.Remove(model)
	again, err := RunGrid(context.Background(), g, GridOptions{OutDir: out, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(model); again.Ran != 1 || again.Skipped != len(g.Points)-1 || !bytes.Equal(got, want) {
		t.Errorf("after deleting a model: ran %d, skipped %d (want 1 and %d), same model %v", again.Ran, again.Skipped, len(g.Points)-1, bytes.Equal(got, want))
	}
}

// TestResumeWithShortMetrics: a checkpoint whose metrics.csv lacks rows it
// covers is not resumed from (the missing rows cannot be redone): the run
// starts over and finishes with every row; temporary files left by a
// killed write are removed.
func TestResumeWithShortMetrics(t *testing.T) {
	t.Parallel()
	cfg := loadRun(t, folderRun)
	straight, err := Run(context.Background(), cfg, Options{OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(straight.Dir, "metrics.csv"))

	for _, cut := range []bool{false, true} {
		out := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		_, err := Run(ctx, cfg, Options{OutDir: out, AfterRound: func(rep RoundReport) {
			if r := rep.Round; r == 7 {
				cancel()
			}
		}})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("interrupted run: %v", err)
		}
		dir := straight.Dir[len(filepath.Dir(straight.Dir)):]
		dir = filepath.Join(out, dir)
		tmp := filepath.Join(dir, ".metrics.csv.tmp-123")
		os.WriteFile(tmp, []byte("round,"), 0o600)
		if cut {
			os.WriteFile(filepath.Join(dir, "metrics.csv"), []byte(strings.Join(results.MetricsHeader, ",")+"\n"), 0o644)
		}
		var log bytes.Buffer
		res, err := Run(context.Background(), cfg, Options{OutDir: out, Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		// Negative control (cut false): an intact checkpoint is resumed.
		if wantFrom := map[bool]int{false: 7, true: 0}[cut]; res.Summary.ResumedFrom != wantFrom {
			t.Errorf("cut %v: resumed from round %d, want %d (log %q)", cut, res.Summary.ResumedFrom, wantFrom, log.String())
		}
		if cut && !strings.Contains(log.String(), "starting over") {
			t.Errorf("no notice that the checkpoint was ignored: %q", log.String())
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "metrics.csv")); !bytes.Equal(got, want) {
			t.Errorf("cut %v: final metrics differ from the straight run's:\n%s", cut, got)
		}
		if _, err := os.Stat(tmp); !os.IsNotExist(err) {
			t.Errorf("cut %v: the temporary file of a killed write is still there", cut)
		}
	}
}

// TestEditedTraceIsANewRun: the content of a trace file is part of the run's
// identity. A trace edited between a kill and the rerun gives a new run ID,
// trained from round 0 on the new trace: its sensitivity (which sets the
// noise for the target epsilon) and results are those of a fresh run on the
// new trace, not the old one's. A trace edited while a run goes makes that
// run fail instead of recording a summary.
func TestEditedTraceIsANewRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := func(clients int) []byte {
		var b strings.Builder
		b.WriteString("client,start,end\n")
		for c := range clients {
			b.WriteString(strconv.Itoa(c) + ",0,360000\n")
		}
		return []byte(b.String())
	}
	// Every round takes all of the sparse trace's 100 clients (8
	// participations each); the dense trace spreads them over 1000.
	sparse, dense := trace(100), trace(1000)
	path := filepath.Join(dir, "trace.csv")
	yml := strings.Replace(folderRun, "participation: {cohort: 100}",
		"participation: {cohort: 100, clock: {round_minutes: 30}, availability: {kind: trace, file: trace.csv}}", 1)
	os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(yml), 0o644)
	cfg, _, err := LoadFile(filepath.Join(dir, "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	opts := func(out string) Options { return Options{OutDir: out, BaseDir: dir} }
	fresh := func(content []byte) *Outcome {
		os.WriteFile(path, content, 0o644)
		res, err := Run(context.Background(), cfg, opts(t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	onSparse, onDense := fresh(sparse), fresh(dense)
	// The noise is calibrated to the realized participation: sqrt(8)
	// on the sparse trace, sqrt(max participations) on the dense one.
	if onSparse.Summary.Sensitivity == onDense.Summary.Sensitivity {
		t.Fatalf("both traces give sensitivity %v: the test cannot tell them apart", onSparse.Summary.Sensitivity)
	}

	out := t.TempDir()
	os.WriteFile(path, sparse, 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	o := opts(out)
	o.AfterRound = func(rep RoundReport) {
		if r := rep.Round; r == 4 {
			cancel()
		}
	}
	if _, err := Run(ctx, cfg, o); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	cancel()
	os.WriteFile(path, dense, 0o644)
	res, err := Run(context.Background(), cfg, opts(out))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(res.Dir) != filepath.Base(onDense.Dir) || filepath.Base(res.Dir) == filepath.Base(onSparse.Dir) {
		t.Errorf("run after the edit is %s; want the dense trace's ID (%s), not the sparse one's (%s)",
			filepath.Base(res.Dir), filepath.Base(onDense.Dir), filepath.Base(onSparse.Dir))
	}
	if res.Summary.ResumedFrom != 0 || res.Summary.Sensitivity != onDense.Summary.Sensitivity || res.Summary.FinalAccuracy != onDense.Summary.FinalAccuracy {
		t.Errorf("after the edit: resumed from %d, sensitivity %v, accuracy %v; want 0 and the dense trace's %v, %v (sparse: %v)",
			res.Summary.ResumedFrom, res.Summary.Sensitivity, res.Summary.FinalAccuracy, onDense.Summary.Sensitivity, onDense.Summary.FinalAccuracy, onSparse.Summary.Sensitivity)
	}
	if res.Summary.Inputs["participation.availability.file"] == "" {
		t.Error("summary.json does not record the trace's fingerprint")
	}

	// Edited during the run: no summary.
	os.WriteFile(path, sparse, 0o644)
	o = opts(t.TempDir())
	o.AfterRound = func(rep RoundReport) {
		if r := rep.Round; r == 2 {
			os.WriteFile(path, dense, 0o644)
		}
	}
	res, err = Run(context.Background(), cfg, o)
	if err == nil || !strings.Contains(err.Error(), "participation.availability.file changed while the run was going") {
		t.Fatalf("trace edited mid-run: %v; want an error naming the file", err)
	}
}

// TestDeltaBelowInversePopulation: delta must be below 1/population unless
// the config opts out; the error names the key and says how.
func TestDeltaBelowInversePopulation(t *testing.T) {
	for _, c := range []struct {
		privacy string
		err     string
	}{
		{"{delta: 1.0e-3}", "privacy.delta: 0.001 is not below 1/population = 1/1000"},
		{"{delta: 0.5}", "privacy.allow_large_delta: true"},
		{"{delta: 9.9e-4}", ""},
		{"{delta: 1.0e-3, allow_large_delta: true}", ""},
	} {
		// With data.clients the population is known when validating.
		cfg, _, err := Load([]byte(strings.Replace(folderRun, "privacy: {delta: 1.0e-5}", "privacy: "+c.privacy, 1)), "run.yaml")
		if err == nil {
			_, err = NewAccount(context.Background(), cfg, Options{})
		}
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("privacy %s: %v; want %q", c.privacy, err, c.err)
		}
	}
	// Without noise there is no delta to check.
	cfg := loadRun(t, strings.Replace(strings.Replace(folderRun, "privacy: {delta: 1.0e-5}", "privacy: {delta: 0.5}", 1), "noise_multiplier: 0.5", "noise_multiplier: 0", 1))
	if _, err := NewAccount(context.Background(), cfg, Options{}); err != nil {
		t.Errorf("non-private run: %v", err)
	}
}

// TestNobodyAvailableIsAnError: a trace under which no client is ever
// available (empty, or only outside the run's hours) is an error naming the
// file, not a complete run with epsilon 0.
func TestNobodyAvailableIsAnError(t *testing.T) {
	dir := t.TempDir()
	yml := strings.Replace(folderRun, "participation: {cohort: 100}",
		"participation: {cohort: 100, availability: {kind: trace, file: trace.csv}}", 1)
	os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(yml), 0o644)
	cfg, _, err := LoadFile(filepath.Join(dir, "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for trace, ok := range map[string]bool{
		"client,start,end\n":                    false,
		"client,start,end\n5,999999,9999999\n":  false, // after the run
		"client,start,end\n5,0,9999999\n":       true,  // negative control: client 5 every round
		"# comment only\nclient,start,end\n\n":  false,
		"client,start,end\n5,0,10\n6,60,600\n":  true,
		"client,start,end\n5,10,20\n6,70,590\n": false, // between rounds 0 and 1 (every 10 min)
	} {
		os.WriteFile(filepath.Join(dir, "trace.csv"), []byte(trace), 0o644)
		_, err := NewAccount(context.Background(), cfg, Options{BaseDir: dir})
		if ok != (err == nil) || !ok && !strings.Contains(err.Error(), "no client takes part in any of the 8 rounds: participation.availability.file") {
			t.Errorf("trace %q: %v", trace, err)
		}
	}
}
