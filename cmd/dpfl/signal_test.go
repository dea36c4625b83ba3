//go:build unix

package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dpfl/results"
)

// mainEnv makes the test binary run main with the arguments after "--":
// the signal tests need a real process to signal.
const mainEnv = "DPFL_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		for i, a := range os.Args {
			if a == "--" {
				os.Args = append([]string{"dpfl"}, os.Args[i+1:]...)
				break
			}
		}
		main()
	}
	os.Exit(m.Run())
}

// startDPFL starts `dpfl args...` as a child process; its stderr lines go to
// the returned channel.
func startDPFL(t *testing.T, dir string, args ...string) (*exec.Cmd, <-chan string, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	cmd.Dir = dir
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, lines, &stdout
}

// waitFor reads lines until one contains want, returning all read.
func waitFor(t *testing.T, lines <-chan string, want string, limit time.Duration) []string {
	t.Helper()
	var got []string
	deadline := time.After(limit)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("process ended before printing %q:\n%s", want, strings.Join(got, "\n"))
			}
			got = append(got, l)
			if strings.Contains(l, want) {
				return got
			}
		case <-deadline:
			t.Fatalf("no %q within %v:\n%s", want, limit, strings.Join(got, "\n"))
		}
	}
}

// stopLimit is how soon a signalled process must end. The work it
// interrupts (an optimization, a training run) would go on for tens of
// seconds; 5 s leaves room for a machine busy with the other packages'
// tests.
const stopLimit = 5 * time.Second

// stopWith sends sig and waits for the process: it must end within
// stopLimit with 128+sig and, as its last line, the one-line notice.
func stopWith(t *testing.T, cmd *exec.Cmd, lines <-chan string, sig syscall.Signal) (last string) {
	t.Helper()
	start := time.Now()
	cmd.Process.Signal(sig)
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	err := cmd.Wait()
	took := time.Since(start)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 128+int(sig) {
		t.Errorf("exit: %v; want code %d", err, 128+int(sig))
	}
	if took > stopLimit {
		t.Errorf("the process took %v to stop after %v (limit %v)", took, sig, stopLimit)
	}
	all := strings.Join(rest, "\n")
	if len(rest) == 0 || !strings.Contains(rest[len(rest)-1], "stopped by SIG") || strings.Contains(all, "context canceled") {
		t.Errorf("stderr after the signal:\n%s\nwant one line saying it was stopped, no 'context canceled'", all)
	}
	if len(rest) > 0 {
		last = rest[len(rest)-1]
	}
	return last
}

// TestSignalDuringStrategyOptimization: SIGTERM in the middle of a long
// L-BFGS optimization (dpfl mechanism) ends the process within stopLimit, code 143.
func TestSignalDuringStrategyOptimization(t *testing.T) {
	cmd, lines, _ := startDPFL(t, t.TempDir(), "mechanism", "-n", "1500", "-strategy", "bandmf", "-bands", "128", "-cache", "", "-progress")
	waitFor(t, lines, "L-BFGS iteration 25", time.Minute)
	last := stopWith(t, cmd, lines, syscall.SIGTERM)
	if !strings.Contains(last, keptStrategies) {
		t.Errorf("last line %q: want the mechanism's notice (the interrupted optimization is not saved)", last)
	}
}

// TestSignalDuringRunPlanningAndTraining: SIGINT while dpfl run optimizes
// its strategy (planning) stops it within stopLimit with code 130 and nothing
// written; SIGTERM while it trains stops it with code 143 and a checkpoint
// from which a rerun resumes.
func TestSignalDuringRunPlanningAndTraining(t *testing.T) {
	dir := t.TempDir()
	cfg := `name: sig
seed: 1
rounds: 1200
data: {dataset: mnist, clients: 6000}
model: {kind: logreg}
client: {batch_size: 10, lr: 0.1}
participation: {kind: kb, cohort: 5, k: 1, b: 1200}
aggregator: {kind: bandmf, bands: 200, clip: 1, noise_multiplier: 1, cache: cache}
privacy: {delta: 1.0e-5}
server: {lr: 1}
eval: {every: 100}
`
	os.WriteFile(filepath.Join(dir, "sig.yaml"), []byte(cfg), 0o644)
	cmd, lines, _ := startDPFL(t, dir, "run", "-out", "out", "sig.yaml")
	time.Sleep(1500 * time.Millisecond) // into the strategy optimization
	stopWith(t, cmd, lines, syscall.SIGINT)
	if ents, _ := os.ReadDir(filepath.Join(dir, "out")); len(ents) != 0 {
		t.Errorf("a run stopped while planning left %d run folders", len(ents))
	}

	// Training: a small strategy, so that planning is quick.
	cfg = strings.Replace(strings.Replace(cfg, "bands: 200", "bands: 2", 1), "rounds: 1200", "rounds: 600", 1)
	os.WriteFile(filepath.Join(dir, "sig.yaml"), []byte(cfg), 0o644)
	cmd, lines, _ = startDPFL(t, dir, "run", "-quiet", "-out", "out", "sig.yaml")
	deadline := time.Now().Add(time.Minute)
	var ckpt string
	for ckpt == "" && time.Now().Before(deadline) {
		m, _ := filepath.Glob(filepath.Join(dir, "out", "sig-*", "metrics.csv"))
		if len(m) == 1 {
			if b, _ := os.ReadFile(m[0]); bytes.Count(b, []byte("\n")) >= 2 { // one evaluation done
				ckpt = filepath.Join(filepath.Dir(m[0]), "checkpoint.bin")
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ckpt == "" {
		t.Fatal("the run did not reach its first evaluation within a minute")
	}
	stopWith(t, cmd, lines, syscall.SIGTERM)
	ck, err := results.ReadCheckpoint(ckpt)
	if err != nil || ck.Round < 100 {
		t.Fatalf("checkpoint after SIGTERM: %v, %+v", err, ck)
	}
}

// TestSignalDuringAccountCalibration: SIGTERM while dpfl account calibrates
// sigma with the PLD accountant (a million sampled steps: many seconds of
// evaluations, some of them long) stops it within stopLimit with code 143
// and no answer printed.
func TestSignalDuringAccountCalibration(t *testing.T) {
	cmd, lines, stdout := startDPFL(t, t.TempDir(), "account", "-accountant", "pld", "-q", "0.01", "-steps", "1000000", "-epsilon", "2", "-delta", "1e-6")
	time.Sleep(1500 * time.Millisecond) // into the calibration
	stopWith(t, cmd, lines, syscall.SIGTERM)
	if stdout.Len() != 0 {
		t.Errorf("a stopped calibration printed:\n%s", stdout)
	}
}
