package experiments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"dpfl/results"
)

// runDir is a run's folder, OutDir/NAME-RUNID. The rules that keep a
// finished result safe:
//
//   - One process at a time owns the folder, by an OS lock on its .lock
//     file (results.Lock): a second process is refused and touches nothing,
//     and a killed owner leaves no lock behind.
//   - A run is complete when summary.json says so and its files agree with
//     each other and with the configuration (finished). A complete run is
//     never trained again nor written to.
//   - An owner that starts (or restarts) a run first deletes temporary files
//     left by a killed writer and any summary.json that failed those checks,
//     so a kill at any later moment leaves an unfinished run, never a
//     "complete" one beside partial files. summary.json is written last.
type runDir struct {
	dir     string
	id      string
	inputs  Inputs
	cfgYAML []byte // the normalized configuration, as config.yaml holds it (less Plan.configFile's comments)
	lock    *results.DirLock
}

// identify fingerprints cfg's inputs and names its run folder under out,
// without touching the file system.
func identify(cfg *Config, opts Options) (*runDir, error) {
	return identifyContext(context.Background(), cfg, opts)
}

// identifyContext is identify stopping with ctx's error once ctx is done.
func identifyContext(ctx context.Context, cfg *Config, opts Options) (*runDir, error) {
	out := opts.OutDir
	in, err := FingerprintContext(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	id := RunID(cfg, in)
	return &runDir{dir: filepath.Join(out, cfg.Name+"-"+id), id: id, inputs: in, cfgYAML: b}, nil
}

// maxRunFileBytes bounds the config.yaml and audit.json finished reads
// (a run's are kilobytes): a larger file, a device or a FIFO is not the
// run's, and is refused without being read (results.ReadFileMax).
const maxRunFileBytes = 64 << 20

// finished returns the run's summary when the run is complete (or diverged)
// and its files check out: summary.json has this run ID and these inputs,
// config.yaml is this configuration, metrics.csv has exactly the rows of
// the evaluations through the summary's last round (of a complete run, the
// last with the summary's final accuracy and loss), and a complete run's
// model.safetensors is whole and this run's model (openModel: its metadata
// and tensor shapes; the values are not read), unless the folder is a
// published copy of the record without the model (publishedCopy). When
// summary.json exists but fails a check, the error says which (nil
// summary); when there is no summary, both are nil.
func (rd *runDir) finished(cfg *Config) (*results.Summary, error) {
	s, err := results.ReadSummary(filepath.Join(rd.dir, "summary.json"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	case s.Status != "complete" && s.Status != "diverged":
		return nil, fmt.Errorf("summary.json has status %q", s.Status)
	case s.RunID != rd.id:
		return nil, fmt.Errorf("summary.json belongs to run %s", s.RunID)
	case len(rd.inputs.Changed(s.Inputs)) > 0:
		return nil, fmt.Errorf("summary.json was made from other versions of %s", strings.Join(rd.inputs.Changed(s.Inputs), ", "))
	case s.Status == "complete" && s.Rounds != cfg.Rounds && !(cfg.AGD() && s.Rounds > 0 && s.Rounds < cfg.Rounds):
		// (dp-agd completes when its budget is spent, at most rounds)
		return nil, fmt.Errorf("summary.json says complete after %d of %d rounds", s.Rounds, cfg.Rounds)
	}
	b, err := results.ReadFileMax(filepath.Join(rd.dir, "config.yaml"), maxRunFileBytes)
	if err != nil {
		return nil, fmt.Errorf("config.yaml unreadable: %w", err)
	}
	// Compared by identity, not bytes: a configuration key added since
	// the run was written (zero by default) does not make it a stranger.
	var old Config
	if _, err := Decode(b, "config.yaml", &old); err != nil {
		return nil, fmt.Errorf("config.yaml unreadable: %w", err)
	}
	if RunID(&old, s.Inputs) != rd.id {
		return nil, errors.New("config.yaml is another configuration")
	}
	rows, err := results.ReadMetrics(filepath.Join(rd.dir, "metrics.csv"))
	if err == nil {
		total := cfg.Rounds
		if cfg.AGD() {
			total = s.Rounds // dp-agd ends when its budget does: its last round was evaluated
		}
		err = checkEvalRows(rows, s.Rounds, cfg.Eval.Every, total)
	}
	if err == nil && s.Status == "complete" && len(rows) > 0 {
		// The last row is the final evaluation summary.json reports
		// (written from the same values): another run's metrics.csv with
		// the same rounds is not this run's.
		last := rows[len(rows)-1]
		if !sameFloat(last.TestAccuracy, s.FinalAccuracy) || !sameFloat(last.TestLoss, s.FinalTestLoss) {
			err = fmt.Errorf("its last row has test accuracy %v and loss %v, summary.json's final ones are %v and %v", last.TestAccuracy, last.TestLoss, s.FinalAccuracy, s.FinalTestLoss)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("metrics.csv does not match summary.json: %w", err)
	}
	if s.Status == "complete" && !publishedCopy(rd.dir) {
		// A complete run has its model (written before summary.json): it
		// must be there, whole, and this run's.
		st, _, _, err := openModel(filepath.Join(rd.dir, results.ModelFile), cfg, rd.id, s.Rounds)
		if err != nil {
			return nil, err
		}
		st.Close()
	}
	if cfg.Audit.Canaries > 0 && s.Status == "complete" {
		var a AuditRecord
		b, err := results.ReadFileMax(filepath.Join(rd.dir, AuditFile), maxRunFileBytes)
		if err == nil {
			err = json.Unmarshal(b, &a)
		}
		if err != nil || s.Audit == nil || a.Canaries != cfg.Audit.Canaries {
			return nil, fmt.Errorf("%s missing or not this run's", AuditFile)
		}
	}
	return s, nil
}

// open takes the folder for this process and prepares it for training. It
// returns the outcome instead when the run turns out complete (another
// process may have just finished it), and an error wrapping
// results.ErrLocked when another process owns the folder.
func (rd *runDir) open(cfg *Config, log io.Writer) (*Outcome, error) {
	lock, err := results.Lock(rd.dir)
	if err != nil {
		return nil, err
	}
	s, why := rd.finished(cfg)
	if s != nil {
		lock.Unlock()
		return &Outcome{Dir: rd.dir, Summary: *s, AlreadyComplete: true}, nil
	}
	rd.lock = lock
	if why != nil {
		logf(log, "%s: not complete after all (%v): running it again", rd.dir, why)
	}
	if removed, err := results.RemoveTemp(rd.dir); err != nil {
		rd.close()
		return nil, err
	} else if len(removed) > 0 {
		logf(log, "%s: removed %d temporary file(s) left by an interrupted write", rd.dir, len(removed))
	}
	for _, name := range []string{"summary.json", ErrorFile} {
		if err := os.Remove(filepath.Join(rd.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			rd.close()
			return nil, fmt.Errorf("experiments: %w", err)
		}
	}
	return nil, nil
}

// close releases the folder.
func (rd *runDir) close() {
	rd.lock.Unlock()
	rd.lock = nil
}

// recordFailure writes err into the folder's ErrorFile (when no other
// process owns the folder) and returns err, joined with a write failure.
func (rd *runDir) recordFailure(err error) error {
	lock, lerr := results.Lock(rd.dir)
	if lerr != nil {
		return err
	}
	defer lock.Unlock()
	if werr := results.WriteFileAtomic(filepath.Join(rd.dir, ErrorFile), []byte(err.Error()+"\n")); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// evalRounds lists the rounds through round done that a run of total
// rounds evaluating every `every` rounds (and after the last) evaluates.
func evalRounds(done, every, total int) []int {
	var out []int
	for r := every; r <= done; r += every {
		out = append(out, r)
	}
	if done == total && (len(out) == 0 || out[len(out)-1] != total) {
		out = append(out, total)
	}
	return out
}

// checkEvalRows reports whether rows are exactly the evaluations through
// round done.
func checkEvalRows(rows []results.MetricsRow, done, every, total int) error {
	want := evalRounds(done, every, total)
	got := make([]int, len(rows))
	for i, r := range rows {
		got[i] = r.Round
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("rows for %d evaluated rounds %s, want %d through round %d", len(got), roundList(got), len(want), done)
	}
	return nil
}

// publishedCopy reports whether the run folder dir is a copy of a run's
// record without its model: it has neither model.safetensors nor
// participation.json, which every run writes when it starts training (the
// committed runs of results/paper are such copies). A run whose model alone
// is gone is not one.
func publishedCopy(dir string) bool {
	for _, name := range []string{results.ModelFile, "participation.json"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			return false
		}
	}
	return true
}

// sameFloat reports whether a and b are equal, or both NaN.
func sameFloat(a, b float64) bool { return a == b || a != a && b != b }

// roundList is a short display of a list of rounds.
func roundList(rs []int) string {
	switch {
	case len(rs) == 0:
		return "(none)"
	case len(rs) <= 4:
		return fmt.Sprint(rs)
	}
	return fmt.Sprintf("[%d %d ... %d]", rs[0], rs[1], rs[len(rs)-1])
}
