package experiments

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dpfl/datasets"
	"dpfl/results"
)

// streamRun is a short private next-word run on a TFF file, its data.stream
// and aggregator (and other sections) given.
func streamRun(path, stream, agg, extra string) string {
	return `name: stream
seed: 7
rounds: 6
data:
  dataset: tff-stackoverflow
  path: ` + path + `
  vocab: 40
  seq_len: 8
  min_tokens: 5
  stream: ` + stream + `
model:
  kind: lstm
  embed: 8
  hidden: [16]
client:
  batch_size: 4
  lr: 0.5
aggregator:
  clip: 1
` + agg + `privacy:
  epsilon: 8
  delta: 1.0e-5
eval:
  every: 2
` + extra
}

// TestStreamedRunsMatch: runs that stream a TFF file (two workers) and
// runs that read it into memory (one) write the same run: the same run ID,
// metrics.csv, model.safetensors, summary (but its wall time) and audit,
// for DP-FedAvg, a correlated-noise mechanism, adaptive clipping, DP-AGD
// (whose loss scoring reads the cohort again), a server optimizer and an
// audit's canaries (clients beyond the file's).
func TestStreamedRunsMatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "so.sqlite")
	if _, err := datasets.WriteSyntheticTFF(context.Background(), path,
		datasets.SyntheticText{Users: 60, Sentences: 8, Words: 6, Vocab: 80, TestEvery: 3, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	uniform := "participation:\n  cohort: 6\n"
	cases := []struct{ name, agg, extra string }{
		{"dpfedavg", "  kind: dpfedavg\n", uniform + "server:\n  lr: 1\n"},
		{"bandmf", "  kind: bandmf\n  bands: 2\n  cache: " + t.TempDir() + "\n", "participation:\n  kind: minsep\n  cohort: 6\n  k: 2\n  b: 3\nserver:\n  lr: 1\n"},
		{"adaptive", "  kind: dpfedavg\n  clip_quantile: 0.5\n  clip_count_stddev: 3\n", uniform + "server:\n  lr: 1\n"},
		{"dp-agd", "  kind: dp-agd\n  gradient_share: 0.2\n  select_share: 0.1\n  step_candidates: 3\n  max_step: 1\n  loss_clip: 5\n", uniform},
		{"fedadam", "  kind: dpfedavg\n", uniform + "server:\n  optimizer: adam\n  lr: 0.01\n"},
		{"audit", "  kind: dpfedavg\n", "participation:\n  cohort: 10\nserver:\n  lr: 1\naudit:\n  canaries: 20\n  observe: rounds\n"},
	}
	for _, c := range cases {
		mem, memDir := runConfig(t, streamRun(path, "never", c.agg, c.extra), 1)
		str, strDir := runConfig(t, streamRun(path, "always", c.agg, c.extra), 2)
		if str.Summary.RunID != mem.Summary.RunID || str.Summary.Rounds == 0 {
			t.Fatalf("%s: run IDs %s streamed, %s in memory (%d rounds)", c.name, str.Summary.RunID, mem.Summary.RunID, str.Summary.Rounds)
		}
		for _, f := range []string{"metrics.csv", results.ModelFile, "participation.json", AuditFile} {
			a, aerr := os.ReadFile(filepath.Join(memDir, f))
			b, berr := os.ReadFile(filepath.Join(strDir, f))
			if (aerr == nil) != (berr == nil) || !bytes.Equal(a, b) {
				t.Fatalf("%s: %s differs between the streamed and the in-memory run (%v, %v)", c.name, f, aerr, berr)
			}
		}
		ms, ss := mem.Summary, str.Summary
		ms.WallSeconds, ss.WallSeconds, ms.Workers, ss.Workers = 0, 0, 0, 0
		a, _ := json.Marshal(ms)
		b, _ := json.Marshal(ss)
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: summaries differ:\n%s\n%s", c.name, a, b)
		}
		if !strings.Contains(c.extra, "audit") && ss.MajorityAccuracy == nil {
			t.Fatalf("%s: no majority baseline", c.name)
		}
	}
}

// TestStreamConfigErrors: data.stream takes auto, always or never, and
// always only for the text files; the errors name the file and key.
func TestStreamConfigErrors(t *testing.T) {
	for _, c := range []struct{ yml, want string }{
		{streamRun("x.sqlite", "sometimes", "", ""), `c.yaml:10: data.stream: "sometimes": want one of auto, always, never`},
		{strings.Replace(strings.Replace(streamRun("x.sqlite", "always", "", ""), "tff-stackoverflow", "tff-emnist", 1), "  vocab: 40\n  seq_len: 8\n  min_tokens: 5\n", "", 1),
			"data.stream: always: only the text files (tff-stackoverflow, tff-shakespeare) are streamed, not tff-emnist"},
		{strings.Replace(streamRun("x", "never", "", ""), "tff-stackoverflow", "leaf", 1), "data.stream: only dataset tff-emnist, tff-stackoverflow or tff-shakespeare uses it"},
	} {
		_, _, err := Load([]byte(c.yml), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}
