//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mechanismStopLimit is how soon dpfl mechanism must end after a signal in
// its dense metrics (products of n×n matrices, long at these sizes): they
// run aside and the command returns at once.
const mechanismStopLimit = 2 * time.Second

// TestSignalDuringMechanismMetrics: SIGINT during a comparison's dense
// evaluation (n = 2500, after dpfedavg starts) ends dpfl mechanism within
// mechanismStopLimit with code 130, and SIGTERM while the -memory
// comparison evaluates BLT (n = 3000) and while an 8-buffer BLT is being
// optimized (n = 3000) with code 143.
func TestSignalDuringMechanismMetrics(t *testing.T) {
	for _, c := range []struct {
		args  []string
		line  string
		sleep bool
		sig   syscall.Signal
	}{
		{[]string{"mechanism", "-n", "2500", "-cache", ""}, ": dpfedavg...", true, syscall.SIGINT},
		{[]string{"mechanism", "-n", "3000", "-memory", "2", "-cache", ""}, "dpfl mechanism: memory 2: blt...", true, syscall.SIGTERM},
		{[]string{"mechanism", "-n", "3000", "-strategy", "blt", "-buffers", "8", "-progress", "-cache", ""}, "L-BFGS iteration 25", false, syscall.SIGTERM},
	} {
		cmd, lines, _ := startDPFL(t, t.TempDir(), c.args...)
		waitFor(t, lines, c.line, time.Minute)
		if c.sleep {
			time.Sleep(time.Second) // into the n×n products
		}
		start := time.Now()
		stopWith(t, cmd, lines, c.sig)
		if took := time.Since(start); took > mechanismStopLimit {
			t.Errorf("%v: stopped %v after %v (limit %v)", c.args, took, c.sig, mechanismStopLimit)
		}
	}
}

// TestMechanismWorkloadFileNotRegular: a -workload-file that is a named
// pipe (whose open blocked until a writer came), a directory or a device
// is refused at once with one line naming the flag; a file whose first row
// is longer than the n that fits in -max-memory is refused after that row.
func TestMechanismWorkloadFileNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "w.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	for path, kind := range map[string]string{fifo: "a named pipe", dir: "a folder", "/dev/null": "a device"} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			code, _, errs := runMechanism(t, "-workload-file", path, "-cache", "")
			if code != 2 || !strings.Contains(errs, "-workload-file: "+path+" is not a regular file ("+kind+")") {
				t.Errorf("%s: exit %d %q", path, code, errs)
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no answer within 10 s", path)
		}
	}
	wide := filepath.Join(dir, "wide.txt")
	os.WriteFile(wide, []byte(strings.Repeat("0 ", 3000)+"1\n"), 0o644)
	if code, _, errs := runMechanism(t, "-workload-file", wide, "-max-memory", "0.1", "-cache", ""); code != 2 || !strings.Contains(errs, "3001 entries, above the") {
		t.Errorf("wide: exit %d %q", code, errs)
	}
}

// TestSignalDuringAccountSensitivity: SIGTERM while dpfl account computes
// a ν-DP-FTRL mechanism's (k,b) sensitivity through its 4000×4000 Gram
// matrix (one long dense computation) ends the process within
// mechanismStopLimit with code 143.
func TestSignalDuringAccountSensitivity(t *testing.T) {
	dir := t.TempDir()
	cfg := `name: s
seed: 5
rounds: 4000
data:
  dataset: mnist
  clients: 200000
model:
  kind: logreg
client:
  lr: 0.1
aggregator:
  clip: 1
  kind: nu-ftrl
  cache: ` + filepath.Join(dir, "cache") + `
privacy:
  epsilon: 4
  delta: 1.0e-6
server:
  lr: 1
participation:
  kind: kb
  cohort: 50
  k: 4
  b: 1000
`
	if err := os.WriteFile(filepath.Join(dir, "nu.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, lines, _ := startDPFL(t, dir, "account", "nu.yaml")
	time.Sleep(2 * time.Second) // into the Gram matrix
	start := time.Now()
	stopWith(t, cmd, lines, syscall.SIGTERM)
	if took := time.Since(start); took > mechanismStopLimit {
		t.Errorf("stopped %v after SIGTERM (limit %v)", took, mechanismStopLimit)
	}
}
