package experiments

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"dpfl/results"
)

// resumeConfig is a short BandMF run with server momentum: the state a
// checkpoint must carry is the model, the momentum buffer and the banded
// noise recurrence (replayed from the seed).
func resumeConfig(cache string) string {
	return `name: resume
seed: 5
rounds: 12
data:
  dataset: mnist
  clients: 2000
model:
  kind: logreg
client:
  batch_size: 5
  lr: 0.2
participation:
  kind: kb
  cohort: 500
  k: 3
  b: 4
aggregator:
  kind: bandmf
  bands: 4
  clip: 1
  noise_multiplier: 0.3
  cache: ` + cache + `
privacy:
  delta: 1.0e-5
server:
  lr: 0.5
  momentum: 0.9
eval:
  every: 3
`
}

// TestResumeBitIdentical cancels a run after round 7, reruns it, and checks
// that the resumed run's metrics.csv and accuracies equal an uninterrupted
// run's byte for byte; a checkpoint with one perturbed parameter (negative
// control) must change them, and a corrupt checkpoint is detected and the run
// starts over.
func TestResumeBitIdentical(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	cfg, _, err := Load([]byte(resumeConfig(cache)), "resume.yaml")
	if err != nil {
		t.Fatal(err)
	}
	full, err := Run(context.Background(), cfg, Options{OutDir: t.TempDir(), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(full.Dir, "metrics.csv"))

	interrupt := func(out string, at int) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err := Run(ctx, cfg, Options{OutDir: out, Workers: 2, AfterRound: func(rep RoundReport) {
			if r := rep.Round; r == at {
				cancel()
			}
		}})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("interrupted run: got %v, want context.Canceled", err)
		}
	}
	out := t.TempDir()
	interrupt(out, 7)
	dir := filepath.Join(out, cfg.Name+"-"+RunID(cfg, nil))
	ck, err := results.ReadCheckpoint(filepath.Join(dir, CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if ck.Round != 7 {
		t.Fatalf("checkpoint after round %d, want 7 (the last completed round)", ck.Round)
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); !os.IsNotExist(err) {
		t.Fatalf("an interrupted run wrote summary.json (err %v)", err)
	}
	var log bytes.Buffer
	res, err := Run(context.Background(), cfg, Options{OutDir: out, Workers: 1, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.ResumedFrom != 7 {
		t.Errorf("resumed from round %d, want 7 (log: %s)", res.Summary.ResumedFrom, log.String())
	}
	got, _ := os.ReadFile(filepath.Join(dir, "metrics.csv"))
	if !bytes.Equal(got, want) {
		t.Errorf("resumed metrics differ from the uninterrupted run:\n%s\nwant\n%s", got, want)
	}
	if res.Summary.FinalAccuracy != full.Summary.FinalAccuracy || res.Summary.BestAccuracy != full.Summary.BestAccuracy {
		t.Errorf("accuracy %v/%v, uninterrupted %v/%v", res.Summary.FinalAccuracy, res.Summary.BestAccuracy, full.Summary.FinalAccuracy, full.Summary.BestAccuracy)
	}
	if _, err := os.Stat(filepath.Join(dir, CheckpointFile)); !os.IsNotExist(err) {
		t.Errorf("checkpoint left behind after the run finished (err %v)", err)
	}

	// Negative control: a checkpoint whose model differs in one bias
	// must change the results.
	out2 := t.TempDir()
	interrupt(out2, 5)
	dir2 := filepath.Join(out2, cfg.Name+"-"+RunID(cfg, nil))
	ck, err = results.ReadCheckpoint(filepath.Join(dir2, CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	ck.Params[len(ck.Params)-1] += 0.5 // a bias (pixel 0 of MNIST is always blank: its weight would not matter)
	if err := results.WriteCheckpoint(filepath.Join(dir2, CheckpointFile), ck); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), cfg, Options{OutDir: out2, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir2, "metrics.csv")); bytes.Equal(got, want) {
		t.Error("negative control: a perturbed checkpoint gave the uninterrupted metrics; the comparison cannot detect a bad resume")
	}

	// A corrupt checkpoint is detected and the run starts over.
	out3 := t.TempDir()
	interrupt(out3, 4)
	dir3 := filepath.Join(out3, cfg.Name+"-"+RunID(cfg, nil))
	path := filepath.Join(dir3, CheckpointFile)
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 1
	os.WriteFile(path, b, 0o644)
	log.Reset()
	res, err = Run(context.Background(), cfg, Options{OutDir: out3, Workers: 1, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.ResumedFrom != 0 || !bytes.Contains(log.Bytes(), []byte("checksum")) {
		t.Errorf("corrupt checkpoint: resumed from %d, log %q; want a fresh start with a checksum notice", res.Summary.ResumedFrom, log.String())
	}
	if got, _ := os.ReadFile(filepath.Join(dir3, "metrics.csv")); !bytes.Equal(got, want) {
		t.Error("a run restarted after a corrupt checkpoint differs from the uninterrupted run")
	}
}
