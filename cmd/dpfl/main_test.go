package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelpListsCommands(t *testing.T) {
	code, out, _ := runCLI("help")
	if code != exitOK {
		t.Fatalf("help exit %d", code)
	}
	for _, c := range commands {
		if !strings.Contains(out, c.name) {
			t.Errorf("help does not list %q", c.name)
		}
	}
	if code, _, _ := runCLI(); code != exitUsage {
		t.Fatalf("no arguments: exit %d, want %d", code, exitUsage)
	}
	if code, _, errs := runCLI("frobnicate"); code != exitUsage || !strings.Contains(errs, `unknown command "frobnicate"`) {
		t.Fatalf("unknown command: exit %d, %q", code, errs)
	}
}

func TestRunUsageAndFailures(t *testing.T) {
	if code, _, errs := runCLI("run", "-h"); code != exitOK || !strings.Contains(errs, "-workers") || !strings.Contains(errs, "-out") {
		t.Fatalf("run -h: exit %d, %q", code, errs)
	}
	if code, _, _ := runCLI("run"); code != exitUsage {
		t.Fatalf("run without config: exit %d", code)
	}
	if code, _, _ := runCLI("run", "-bogus", "x.yaml"); code != exitUsage {
		t.Fatalf("run with a bad flag: exit %d", code)
	}
	if code, _, errs := runCLI("run", "does-not-exist.yaml"); code != exitFailure || !strings.Contains(errs, "does-not-exist.yaml") {
		t.Fatalf("missing config: exit %d, %q", code, errs)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("rounds: 3\nrandom_key: 1\n"), 0o644)
	code, _, errs := runCLI("run", bad)
	if code != exitFailure || !strings.Contains(errs, `bad.yaml:2: random_key: unknown key "random_key"`) {
		t.Fatalf("bad config: exit %d, %q", code, errs)
	}
}
