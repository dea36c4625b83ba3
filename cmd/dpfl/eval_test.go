package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
