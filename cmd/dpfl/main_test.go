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

// TestStopNotice: after a signal, main says what was kept, and only what the
// command keeps: training checkpoints for run and grid, finished strategies
// for mechanism (an interrupted optimization is not saved), nothing for the
// others. No command but run and grid may promise to continue (the old
// line did, for every command).
func TestStopNotice(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "x.yaml"}, "dpfl: stopped by SIGTERM; rerun the same command to continue from the last checkpoint (an interrupted strategy optimization starts over)"},
		{[]string{"grid", "g.yaml"}, "dpfl: stopped by SIGTERM; rerun the same command to continue from the last checkpoint (an interrupted strategy optimization starts over)"},
		{[]string{"mechanism", "-n", "9"}, "dpfl: stopped by SIGTERM; the strategies optimized before the stop are cached; a rerun starts the interrupted one over"},
		{[]string{"account", "x.yaml"}, "dpfl: stopped by SIGTERM"},
		{[]string{"plot", "dir"}, "dpfl: stopped by SIGTERM"},
		{[]string{"nosuch"}, "dpfl: stopped by SIGTERM"},
		{nil, "dpfl: stopped by SIGTERM"},
	} {
		got := stopNotice(c.args, "SIGTERM")
		if got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
		if c.args != nil && c.args[0] != "run" && c.args[0] != "grid" && strings.Contains(got, "continue") {
			t.Errorf("%v: %q promises a resume the command cannot make", c.args, got)
		}
	}
	for _, c := range commands {
		if c.kept != "" && c.kept != keptTraining && c.kept != keptStrategies {
			t.Errorf("%s: unreviewed stop notice %q", c.name, c.kept)
		}
	}
}
