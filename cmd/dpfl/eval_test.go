package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dpfl/results"
)

// TestEvalCommand: dpfl eval on a completed run prints the accuracy of its
// saved model, equal to the one the run recorded; -data takes another
// config's data section; a folder without a model is an error, and no
// folder a usage error.
func TestEvalCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(cfg, []byte(tinyConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if code, stdout, errs := runCLI("run", cfg, "-out", out, "-quiet", "-workers", "1"); code != exitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, errs)
	}
	runs, _ := filepath.Glob(filepath.Join(out, "tiny-*"))
	if len(runs) != 1 {
		t.Fatalf("run folders %v", runs)
	}
	code, stdout, errs := runCLI("eval", runs[0], "-data", cfg)
	if code != exitOK {
		t.Fatalf("eval: exit %d\n%s\n%s", code, stdout, errs)
	}
	var got, recorded string
	for _, l := range strings.Split(stdout, "\n") {
		if _, after, ok := strings.Cut(l, "test accuracy "); ok && got == "" {
			got, _, _ = strings.Cut(after, ",")
		} else if _, after, ok := strings.Cut(l, "final test accuracy "); ok {
			recorded, _, _ = strings.Cut(after, ",")
		}
	}
	if got == "" || got != recorded || !strings.Contains(stdout, "10000 examples") {
		t.Fatalf("eval printed accuracy %q, recorded %q:\n%s", got, recorded, stdout)
	}
	if code, _, errs := runCLI("eval", dir); code != exitFailure || !strings.Contains(errs, "has no model.safetensors") {
		t.Errorf("no model: exit %d, %q", code, errs)
	}
	if code, _, _ := runCLI("eval"); code != exitUsage {
		t.Errorf("no folder: exit %d", code)
	}
}

// copyRun copies a run folder's files (not its lock) into a new folder.
func copyRun(t *testing.T, from, to string) string {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"config.yaml", "summary.json", "metrics.csv", results.ModelFile} {
		b, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// TestEvalRefusesWhatIsNotTheRun: dpfl eval refuses, with one line naming
// the file (and the tensor, or both run IDs), a model file or config.yaml
// of another run, a model file that is /dev/zero, a 10 GB (sparse) file
// whose header claims a 10 GB tensor, NaN weights, test data of another
// kind (-data), and -workers beyond its bound (a usage error); nothing of
// it is evaluated or printed as the run's.
func TestEvalRefusesWhatIsNotTheRun(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	var runs [2]string
	for i, seed := range []string{"seed: 1", "seed: 2"} {
		cfg := filepath.Join(dir, fmt.Sprintf("tiny%d.yaml", i))
		if err := os.WriteFile(cfg, []byte(strings.Replace(tinyConfig, "seed: 1", seed, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, stdout, errs := runCLI("run", cfg, "-out", out, "-quiet", "-workers", "1"); code != exitOK {
			t.Fatalf("run: exit %d\n%s\n%s", code, stdout, errs)
		}
		m, _ := filepath.Glob(filepath.Join(out, "tiny-*"))
		for _, r := range m {
			if r != runs[0] {
				runs[i] = r
			}
		}
	}
	id := func(run string) string { return strings.TrimPrefix(filepath.Base(run), "tiny-") }
	model := func(run string) string { return filepath.Join(run, results.ModelFile) }
	refused := func(name string, wantCode int, want []string, args ...string) {
		t.Helper()
		code, stdout, errs := runCLI(append([]string{"eval"}, args...)...)
		if code != wantCode || stdout != "" || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("%s: exit %d (want %d), stdout %q, stderr %q", name, code, wantCode, stdout, errs)
			return
		}
		for _, w := range want {
			if !strings.Contains(errs, w) {
				t.Errorf("%s: %q does not say %q", name, errs, w)
			}
		}
	}
	// Another run's model, another run's config.yaml.
	swapped := copyRun(t, runs[0], filepath.Join(dir, "swapped-model"))
	b, _ := os.ReadFile(model(runs[1]))
	os.WriteFile(model(swapped), b, 0o644)
	refused("another run's model", exitFailure, []string{model(swapped), id(runs[1]), id(runs[0])}, swapped)
	swapped = copyRun(t, runs[0], filepath.Join(dir, "swapped-config"))
	b, _ = os.ReadFile(filepath.Join(runs[1], "config.yaml"))
	os.WriteFile(filepath.Join(swapped, "config.yaml"), b, 0o644)
	refused("another run's config.yaml", exitFailure, []string{"config.yaml", id(runs[1]), id(runs[0])}, swapped)

	// /dev/zero as the model.
	if _, err := os.Stat("/dev/zero"); err == nil {
		zero := copyRun(t, runs[0], filepath.Join(dir, "zero"))
		os.Remove(model(zero))
		if err := os.Symlink("/dev/zero", model(zero)); err == nil {
			refused("/dev/zero", exitFailure, []string{model(zero), "is not a regular file"}, zero)
		}
	}
	// A 10 GB sparse file whose header, with the run's metadata, claims a
	// 10 GB W0.
	ts, meta, err := results.ReadSafetensors(model(runs[0]))
	if err != nil {
		t.Fatal(err)
	}
	huge := copyRun(t, runs[0], filepath.Join(dir, "huge"))
	hdr, _ := json.Marshal(map[string]any{
		"__metadata__": meta,
		"W0":           map[string]any{"dtype": "F32", "shape": []int{2684354560}, "data_offsets": []int64{0, 10 << 30}},
	})
	f := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	os.WriteFile(model(huge), append(f, hdr...), 0o644)
	if err := os.Truncate(model(huge), int64(8+len(hdr))+10<<30); err == nil {
		refused("a 10 GB tensor", exitFailure, []string{model(huge), "tensor 0 is W0 [2684354560]", "has W0 [784 10]"}, huge)
	} else {
		t.Logf("no sparse 10 GB file here: %v", err)
	}
	// NaN weights.
	nan := copyRun(t, runs[0], filepath.Join(dir, "nan"))
	ts[1].Data[3] = float32(math.NaN())
	if err := results.WriteSafetensors(model(nan), ts, meta); err != nil {
		t.Fatal(err)
	}
	refused("NaN weights", exitFailure, []string{model(nan), "tensor b0 holds NaN at index 3"}, nan)
	// Test data the model cannot read: next-word text for a classifier.
	corpus := filepath.Join(dir, "c.jsonl")
	var lines strings.Builder
	for u := 0; u < 12; u++ {
		for d := 0; d < 3; d++ {
			fmt.Fprintf(&lines, `{"user": "u%d", "text": "%s"}`+"\n", u, strings.Repeat("the cat runs over the big red tree ", 6))
		}
	}
	os.WriteFile(corpus, []byte(lines.String()), 0o644)
	text := filepath.Join(dir, "text.yaml")
	os.WriteFile(text, []byte(strings.NewReplacer("data: {dataset: mnist, clients: 100}", "data: {dataset: text, path: c.jsonl, vocab: 40, seq_len: 8, min_tokens: 20}",
		"model: {kind: logreg}", "model: {kind: lstm}").Replace(tinyConfig)), 0o644)
	refused("text data for logreg", exitFailure, []string{model(runs[0]), "logreg classifies images", "dataset text) is next-word text"}, runs[0], "-data", text)
	// -workers: each worker holds a model.
	refused("-workers 1000000", exitUsage, []string{"-workers 1000000 must be between 1 and 1024"}, "-workers", "1000000", runs[0])
	refused("-data a device", exitFailure, []string{"-data", "/dev/null is not a regular file"}, runs[0], "-data", os.DevNull)
}
