package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dpfl/aggregators/strategy"
	"dpfl/experiments"
	"dpfl/participation"
)

func runMechanism(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"mechanism"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestMechanismJSONSingle(t *testing.T) {
	dir := t.TempDir()
	// Reference losses (package strategy): n = 64 prefix sums, single participation.
	cases := []struct {
		args []string
		loss float64
		tol  float64
	}{
		{[]string{"-strategy", "identity"}, 2080, 1e-9},
		{[]string{"-strategy", "tree"}, 1351, 1e-9},
		{[]string{"-strategy", "tree-online"}, 853.7182, 1e-4},
		{[]string{"-strategy", "tree-full"}, 405.7182, 1e-4},
		{[]string{"-strategy", "nu", "-nu", "0"}, 318.1733, 1e-4},
		// Gap 1e-9 ⇒ within 1e-9 relative of 282.2014 (4 decimals).
		{[]string{"-strategy", "optimal", "-gap", "1e-9"}, 282.2014, 1e-4},
		{[]string{"-strategy", "bandmf", "-bands", "8"}, 439.4950, 1e-4},
	}
	for _, c := range cases {
		args := append([]string{"-n", "64", "-json", "-cache", dir}, c.args...)
		code, out, errs := runMechanism(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", c.args, code, errs)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v: %v in %q", c.args, err, out)
		}
		for _, k := range []string{"n", "strategy", "participation", "sensitivity", "loss", "rmse"} {
			if _, ok := got[k]; !ok {
				t.Errorf("%v: JSON lacks %q", c.args, k)
			}
		}
		loss := got["loss"].(float64)
		if math.Abs(loss-c.loss) > c.tol {
			t.Errorf("%v: loss %v, want %v (±%g)", c.args, loss, c.loss, c.tol)
		}
		if rmse := got["rmse"].(float64); math.Abs(rmse-math.Sqrt(loss/64)) > 1e-12 {
			t.Errorf("%v: rmse %v ≠ sqrt(loss/n)", c.args, rmse)
		}
		if got["n"].(float64) != 64 || got["strategy"] != c.args[1] || got["participation"] != "single" {
			t.Errorf("%v: header fields %v %v %v", c.args, got["n"], got["strategy"], got["participation"])
		}
	}
	// The optimal strategy was cached by the run above.
	_, out, _ := runMechanism(t, "-n", "64", "-json", "-cache", dir, "-strategy", "optimal", "-gap", "1e-9")
	if !strings.Contains(out, `"cached": true`) {
		t.Errorf("second optimal run not served from the cache: %s", out)
	}
}

func TestMechanismKB(t *testing.T) {
	// Identity under (4,16) at n = 64: sens = 2, loss = 4·2080; BandMF with
	// b̂ = b: sens exactly 2.
	code, out, errs := runMechanism(t, "-n", "64", "-participation", "kb", "-k", "4", "-b", "16", "-strategy", "identity", "-json", "-cache", "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got map[string]any
	json.Unmarshal([]byte(out), &got)
	if got["sensitivity"].(float64) != 2 || math.Abs(got["loss"].(float64)-4*2080) > 1e-9 || got["participation"] != "kb(k=4,b=16)" {
		t.Errorf("identity kb: %v", got)
	}
	code, out, _ = runMechanism(t, "-n", "64", "-participation", "minsep", "-k", "4", "-b", "16", "-strategy", "bandmf", "-json", "-cache", "")
	json.Unmarshal([]byte(out), &got)
	if code != 0 || math.Abs(got["sensitivity"].(float64)-2) > 1e-12 || got["sensitivity_exact"] != true {
		t.Errorf("bandmf minsep: exit %d %v", code, got)
	}
}

func TestMechanismTable(t *testing.T) {
	code, out, errs := runMechanism(t, "-n", "32", "-participation", "kb", "-k", "2", "-b", "16", "-json", "-all", "-cache", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(strategy.Names) {
		t.Fatalf("want %d strategies, got %d", len(strategy.Names), len(rows))
	}
	prev := 0.0
	for _, r := range rows {
		if e, ok := r["error"]; ok {
			t.Errorf("%v failed: %v", r["strategy"], e)
			continue
		}
		l := r["loss"].(float64)
		if l < prev {
			t.Errorf("not sorted best first at %v", r["strategy"])
		}
		prev = l
	}
	// The unequal-norm (F) variants are at least as good under (k,b) as
	// the equal-norm ones (their optimum is feasible for F), to the L-BFGS
	// tolerance.
	loss := map[string]float64{}
	for _, r := range rows {
		if l, ok := r["loss"].(float64); ok {
			loss[r["strategy"].(string)] = l
		}
	}
	for _, v := range []string{"bandmf", "multi-epoch"} {
		if !(loss[v+"-f"] <= loss[v]*(1+1e-8)) {
			t.Errorf("%s-f loss %v above %s %v", v, loss[v+"-f"], v, loss[v])
		}
	}
	code, out, _ = runMechanism(t, "-n", "16", "-cache", "")
	if code != 0 || !strings.Contains(out, "best first") || !strings.Contains(out, "optimal") {
		t.Errorf("text table: exit %d\n%s", code, out)
	}
}

func TestMechanismUsage(t *testing.T) {
	for _, args := range [][]string{
		{},          // -n missing
		{"-n", "0"}, // bad n
		{"-n", "8", "-strategy", "foo"},
		{"-n", "8", "-participation", "kb"}, // k, b missing
		{"-n", "8", "-participation", "nope"},
		{"-n", "8", "-workload", "nope"},
		{"-n", "8", "-nu", "1.5", "-strategy", "nu"},
		{"-n", "8", "-bogus"},
		{"-n", "8", "extra"},
		{"-n", "8", "-k", "2"}, // -k under single
		{"-n", "8", "-strategy", "bandmf"},
		{"-n", "8", "-strategy", "multi-epoch"},
		{"-n", "8", "-strategy", "multi-epoch-f"},
		{"-n", "8", "-strategy", "bandmf-f", "-bands", "2"},
		{"-n", "8", "-reltol", "0"},
		{"-n", "8", "-maxiter", "0"},
		{"-n", "100000000"},                      // dense n×n matrices cannot fit
		{"-n", "100000000", "-strategy", "tree"}, // idem
		{"-n", "2000", "-max-memory", "0.05"},    // 3·8n² = 96 MB > 50 MB
		{"-n", "8", "-max-memory", "0"},
		{"-n", "8", "-restart-every", "-1"},
		{"-n", "8", "-restart-every", "9"},
		{"-n", "8", "-strategy", "bandmf", "-bands", "2", "-restart-every", "4"},
	} {
		code, _, errs := runMechanism(t, args...)
		if code != 2 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.HasPrefix(errs, "dpfl mechanism: ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, code, errs)
		}
	}
	code, _, errs := runMechanism(t, "-h")
	if code != 0 || !strings.Contains(errs, "Usage") {
		t.Errorf("-h: exit %d, stderr %q", code, errs)
	}
	// An n too large is refused with the estimate and the limit.
	_, _, errs = runMechanism(t, "-n", "100000000")
	if !strings.Contains(errs, "-n 100000000: identity needs an estimated 2.4e+08 GB") || !strings.Contains(errs, "above the limit of 16 GB") {
		t.Errorf("-n 100000000: stderr %q", errs)
	}
	// Negative control: the same limit accepts an n that fits.
	if code, out, errs := runMechanism(t, "-n", "64", "-strategy", "tree", "-max-memory", "0.05"); code != 0 || !strings.Contains(out, "tree") {
		t.Errorf("-n 64 within -max-memory 0.05: exit %d, stderr %q", code, errs)
	}
	// A cache that cannot be written is a warning: the strategy is still
	// computed and printed.
	code, out, errs := runMechanism(t, "-n", "8", "-strategy", "bandmf", "-bands", "2", "-cache", "/proc/dpfl-no-such-dir/x")
	if code != 0 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.HasPrefix(errs, "dpfl mechanism: warning: strategy: cache:") || !strings.Contains(out, "sensitivity") {
		t.Errorf("unwritable cache: exit %d, stdout %q, stderr %q; want 0, the strategy, and one warning line", code, out, errs)
	}
}

// TestMechanismRestart: -restart-every R evaluates the trees restarted every
// R rounds. Oracle (counting nodes): the vanilla tree over n = 64 rounds
// restarted every 16 has sensitivity √5 (a round is in one complete node of
// each of the 5 levels of its block's tree), and the prefix estimate of
// round 16j+s sums the j earlier blocks' roots and popcount(s) nodes of its
// own, so the loss is 5·Σ_j Σ_s (j + popcount(s)) = 5·(16·6 + 4·33) = 1140;
// without restarts (the negative control) it is 7·Σ_{t≤64} popcount(t) =
// 1351.
func TestMechanismRestart(t *testing.T) {
	for _, c := range []struct {
		args []string
		name string
		sens float64
		loss float64
	}{
		{[]string{"-restart-every", "16"}, "tree-restart", math.Sqrt(5), 1140},
		{nil, "tree", math.Sqrt(7), 1351},
	} {
		args := append([]string{"-n", "64", "-strategy", "tree", "-json", "-cache", ""}, c.args...)
		code, out, errs := runMechanism(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errs)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v: %v in %q", args, err, out)
		}
		if got["strategy"] != c.name || math.Abs(got["sensitivity"].(float64)-c.sens) > 1e-12 || math.Abs(got["loss"].(float64)-c.loss) > 1e-9 {
			t.Errorf("%v: strategy %v, sensitivity %v, loss %v; want %s, %v, %v", args, got["strategy"], got["sensitivity"], got["loss"], c.name, c.sens, c.loss)
		}
	}
	// In a comparison, every tree row is restarted; the others are not.
	code, out, errs := runMechanism(t, "-n", "64", "-participation", "kb", "-k", "4", "-b", "16", "-restart-every", "16", "-cache", "")
	if code != 0 || !strings.Contains(out, "tree-online-restart") || !strings.Contains(out, "tree-full-restart") || strings.Contains(out, "bandmf-restart") {
		t.Errorf("comparison with -restart-every: exit %d, stderr %q, stdout %s", code, errs, out)
	}
}

func TestMechanismMomentumWorkload(t *testing.T) {
	// Independent implementation (float64): β = 0.9, η ≡ 1, n = 256: identity 2952319.391,
	// Honaker online 274030.331 (3 decimals).
	for _, c := range []struct {
		strategy string
		loss     float64
	}{{"identity", 2952319.391}, {"tree-online", 274030.331}} {
		code, out, errs := runMechanism(t, "-n", "256", "-workload", "momentum", "-momentum", "0.9", "-strategy", c.strategy, "-json", "-cache", "")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if l := got["loss"].(float64); math.Abs(l-c.loss) > 1e-3 || got["workload"] != "momentum" {
			t.Errorf("%s: loss %.3f workload %v, want %.3f momentum", c.strategy, l, got["workload"], c.loss)
		}
	}
}

// TestMechanismNuBands: -nu-bands truncates ν-DP-FTRL's C; the output names
// the bands and reports the truncated strategy's exact sensitivity and loss
// (equal to strategy.Evaluate's to 1e-12 relative) and its O(bands) cost;
// an out-of-range count is a usage error.
func TestMechanismNuBands(t *testing.T) {
	code, out, errs := runMechanism(t, "-n", "40", "-json", "-strategy", "nu", "-nu", "0.05", "-nu-bands", "8", "-participation", "minsep", "-k", "2", "-b", "10")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	m, err := strategy.Evaluate(strategy.NewNuBanded(40, 0.05, 8), strategy.Prefix(40), participation.Spaced(2, 10))
	if err != nil {
		t.Fatal(err)
	}
	if got["strategy"] != "nu-b8" || got["sensitivity_exact"] != true || got["noise_time_per_round_d"] != 8.0 ||
		math.Abs(got["loss"].(float64)-m.Loss) > 1e-12*m.Loss || math.Abs(got["sensitivity"].(float64)-m.Sensitivity.Value) > 1e-12 {
		t.Fatalf("output %v, want loss %v sensitivity %v", got, m.Loss, m.Sensitivity.Value)
	}
	if code, _, errs := runMechanism(t, "-n", "40", "-strategy", "nu", "-nu-bands", "41"); code != 2 || !strings.Contains(errs, "-nu-bands: 41 must be in [1, rounds]") {
		t.Fatalf("-nu-bands 41: exit %d, %q", code, errs)
	}
}

// TestMechanismNuShown: the ν of ν-DP-FTRL is in the output, tuned (JSON nu
// and nu_tuned, text "parameters ν = … (tuned)", table's optimizer column)
// or given (-nu); under b-min-sep its sensitivity is exact.
func TestMechanismNuShown(t *testing.T) {
	want := strategy.TuneNu(60, 0.0005)
	code, out, errs := runMechanism(t, "-n", "60", "-json", "-strategy", "nu-ftrl", "-participation", "minsep", "-k", "4", "-b", "10")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got["nu"] != want || got["nu_tuned"] != true || got["sensitivity_exact"] != true {
		t.Fatalf("JSON %v, want nu %v tuned, exact sensitivity", got, want)
	}
	code, out, errs = runMechanism(t, "-n", "60", "-strategy", "nu-ftrl", "-nu", "0.02")
	if code != 0 || !strings.Contains(out, "parameters      ν = 0.02\n") {
		t.Fatalf("exit %d, text %q %s", code, out, errs)
	}
	code, out, errs = runMechanism(t, "-n", "16", "-cache", "")
	if code != 0 || !strings.Contains(out, "closed form; ν = ") || !strings.Contains(out, "(tuned)") {
		t.Fatalf("exit %d, table %q %s", code, out, errs)
	}
}

// TestMechanismWorkloads: the learning-rate-schedule workloads of the
// strategy reference losses (n = 256, linear cooldown over the last 64 rounds to 0.05; with and
// without momentum 0.9), the identity workload (identity strategy: loss n),
// and a workload file holding the prefix-sum matrix (optimal MF n = 64:
// 282.201421, §D.3); bad workload flags are usage errors.
func TestMechanismWorkloads(t *testing.T) {
	for _, c := range []struct {
		args []string
		loss float64
		tol  float64
	}{
		{[]string{"-n", "256", "-workload", "momentum", "-lr-schedule", "linear", "-cooldown", "64", "-strategy", "identity"}, 2862839.522, 1e-3},
		{[]string{"-n", "256", "-workload", "momentum", "-lr-schedule", "linear", "-cooldown", "64", "-strategy", "tree-online"}, 254744.873, 1e-3},
		{[]string{"-n", "256", "-lr-schedule", "linear", "-cooldown", "64", "-strategy", "identity"}, 31865.185, 1e-3},
		{[]string{"-n", "256", "-lr-schedule", "linear", "-cooldown", "64", "-strategy", "optimal"}, 1502.253, 2e-3},
		{[]string{"-n", "40", "-workload", "identity", "-strategy", "identity"}, 40, 1e-12},
	} {
		code, out, errs := runMechanism(t, append(c.args, "-json", "-cache", "")...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, errs)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if l := got["loss"].(float64); math.Abs(l-c.loss) > c.tol {
			t.Errorf("%v: loss %.4f, want %.4f (workload %v)", c.args, l, c.loss, got["workload"])
		}
	}
	var b strings.Builder
	for i := 0; i < 64; i++ {
		for j := 0; j < 64; j++ {
			if j <= i {
				b.WriteString("1 ")
			} else {
				b.WriteString("0 ")
			}
		}
		b.WriteString("\n")
	}
	file := filepath.Join(t.TempDir(), "prefix64.txt")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runMechanism(t, "-workload-file", file, "-strategy", "optimal", "-json", "-cache", "")
	var got map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	if l := got["loss"].(float64); math.Abs(l-282.201421) > 1e-4 || got["workload"] != "file:"+file || got["n"] != 64.0 {
		t.Errorf("workload file: %v", got)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-n", "10", "-workload", "ramp"}, "unknown -workload \"ramp\""},
		{[]string{"-n", "10", "-lr-schedule", "step"}, `-lr-schedule: unknown value "step"`},
		{[]string{"-n", "10", "-cooldown", "3"}, "-cooldown: only lr_schedule linear or cosine has a cooldown"},
		{[]string{"-n", "10", "-lr-schedule", "linear", "-cooldown", "11"}, "-cooldown: warmup_rounds 0 + cooldown_rounds 11 exceed rounds = 10"},
		{[]string{"-n", "10", "-lr-schedule", "linear", "-cooldown", "3", "-final-lr", "0"}, "would not be invertible"},
		{[]string{"-n", "10", "-workload", "identity", "-momentum", "0.5"}, "do not apply to -workload identity"},
		{[]string{"-n", "10", "-workload-file", file}, "-n 10, but the workload in"},
		{[]string{"-workload-file", file, "-workload", "momentum"}, "-workload does not apply to -workload-file"},
		{[]string{"-workload-file", filepath.Join(t.TempDir(), "none")}, "-workload-file: open"},
	} {
		if code, _, errs := runMechanism(t, c.args...); code != 2 || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d, %q, want %q", c.args, code, errs, c.msg)
		}
	}
	bad := filepath.Join(t.TempDir(), "upper.txt")
	os.WriteFile(bad, []byte("1 1\n0 1\n"), 0o644)
	if code, _, errs := runMechanism(t, "-workload-file", bad); code != 2 || !strings.Contains(errs, "above the diagonal") {
		t.Errorf("upper-triangular file: exit %d, %q", code, errs)
	}
}

// TestMechanismMemoryComparison: -memory prints BLT with m buffers against
// BandMF with m+1 bands (equal noise memory: m vectors), both with exact
// sensitivities, the same noise memory column, and BLT's loss lower on
// prefix sums (n = 64, m = 1, 3); bad lists are usage errors.
func TestMechanismMemoryComparison(t *testing.T) {
	code, out, errs := runMechanism(t, "-n", "64", "-memory", "1,3", "-json", "-cache", "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []struct {
		Memory int `json:"memory_vectors"`
		BLT    struct {
			Strategy    string  `json:"strategy"`
			Loss        float64 `json:"loss"`
			Exact       bool    `json:"sensitivity_exact"`
			NoiseMemory float64 `json:"noise_memory_per_round_d"`
		} `json:"blt"`
		BandMF struct {
			Loss        float64 `json:"loss"`
			Exact       bool    `json:"sensitivity_exact"`
			NoiseMemory float64 `json:"noise_memory_per_round_d"`
		} `json:"bandmf"`
		Ratio float64 `json:"loss_ratio"`
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("%v: %s", err, out)
	}
	for _, r := range rows {
		if r.BLT.Strategy != fmt.Sprintf("blt-m%d", r.Memory) || !r.BLT.Exact || !r.BandMF.Exact || r.BLT.NoiseMemory != r.BandMF.NoiseMemory ||
			!(r.Ratio > 0 && r.Ratio < 1) || math.Abs(r.Ratio-r.BLT.Loss/r.BandMF.Loss) > 1e-12 {
			t.Errorf("memory %d: %+v", r.Memory, r)
		}
	}
	if code, out, _ := runMechanism(t, "-n", "64", "-memory", "2", "-cache", ""); code != 0 || !strings.Contains(out, "BLT with m buffers vs BandMF with m+1 bands") {
		t.Errorf("text: exit %d %q", code, out)
	}
	for _, args := range [][]string{{"-n", "8", "-memory", "0"}, {"-n", "8", "-memory", "8"}, {"-n", "8", "-memory", "x"}, {"-n", "8", "-memory", "2", "-strategy", "blt"},
		{"-n", "8", "-memory", "9223372036854775807"}, {"-n", "8", "-memory", "1,9223372036854775807"}, {"-n", "8", "-memory", "99999999999999999999"},
		{"-n", "100", "-memory", "2,65"}} {
		if code, _, errs := runMechanism(t, args...); code != 2 || !strings.Contains(errs, "-memory") {
			t.Errorf("%v: exit %d %q", args, code, errs)
		}
	}
}

// TestMechanismBLTBufferCap: -buffers above strategy.BLTMaxBuffers is a
// usage error naming the flag (BLT's optimization grows as buffers²: 1,000
// buffers would not finish).
func TestMechanismBLTBufferCap(t *testing.T) {
	for _, m := range []string{"65", "1000"} {
		if code, _, errs := runMechanism(t, "-n", "1000", "-strategy", "blt", "-buffers", m, "-cache", ""); code != 2 || !strings.Contains(errs, "-buffers: "+m) || !strings.Contains(errs, "above 64") {
			t.Errorf("-buffers %s: exit %d %q", m, code, errs)
		}
	}
}

// TestMechanismIntExtremes: every integer flag at the largest int is an
// answer or one usage line naming the flag, never a panic or a hang: -k
// and -b above n mean at most one participation (an answer), the counts
// bounded by n are refused, -n is refused by the memory estimate.
func TestMechanismIntExtremes(t *testing.T) {
	const big = "9223372036854775807"
	if code, out, errs := runMechanism(t, "-n", "10", "-participation", "kb", "-k", big, "-b", big, "-cache", ""); code != 0 || !strings.Contains(out, "dpfedavg") {
		t.Errorf("-k, -b %s: exit %d %q", big, code, errs)
	}
	for _, c := range []struct{ args []string }{
		{[]string{"-n", big}},
		{[]string{"-n", "10", "-restart-every", big}},
		{[]string{"-n", "10", "-participation", "kb", "-k", "1", "-b", "5", "-bands", big}},
		{[]string{"-n", "10", "-strategy", "blt", "-buffers", big}},
		{[]string{"-n", "10", "-strategy", "nu-ftrl", "-nu-bands", big}},
		{[]string{"-n", "10", "-memory", big}},
		{[]string{"-n", "10", "-lr-schedule", "cosine", "-cooldown", "5", "-warmup", big}},
	} {
		flagName := c.args[len(c.args)-2]
		code, _, errs := runMechanism(t, append(c.args, "-cache", "")...)
		if code != 2 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, strings.TrimPrefix(flagName, "-")) {
			t.Errorf("%v: exit %d %q", c.args, code, errs)
		}
	}
}

// TestMechanismFlagsAreKeys: a flag that is an aggregator kind's YAML key
// is refused with the reason the key is refused for in a run's
// configuration (the same validation), named by the flag; and its zero
// means the key's default, so it is accepted where the key's default is
// (negative control).
func TestMechanismFlagsAreKeys(t *testing.T) {
	const run = "name: t\nrounds: 8\ndata: {dataset: mnist, clients: 100}\nmodel: {kind: logreg}\nclient: {lr: 0.1}\n" +
		"participation: {cohort: 10}\naggregator: {clip: 1, noise_multiplier: 0, kind: %s, %s: %s}\nserver: {lr: 1}\n"
	for _, c := range []struct{ flag, kind, key, value string }{
		{"bands", "bandmf", "bands", "9"},
		{"nu", "nu-ftrl", "nu", "1.5"},
		{"nu-bands", "nu-ftrl", "nu_coefficients", "9"},
		{"buffers", "blt", "buffers", "65"},
		{"restart-every", "tree", "restart_every", "9"},
	} {
		_, _, err := experiments.Load([]byte(fmt.Sprintf(run, c.kind, c.key, c.value)), "c.yaml")
		if err == nil {
			t.Fatalf("aggregator.%s: %s was accepted", c.key, c.value)
		}
		_, yamlReason, ok := strings.Cut(err.Error(), "aggregator."+c.key+": ")
		if !ok {
			t.Fatalf("aggregator.%s: %s: %v", c.key, c.value, err)
		}
		yamlReason, _, _ = strings.Cut(yamlReason, "\n")
		code, _, errs := runMechanism(t, "-n", "8", "-strategy", c.kind, "-"+c.flag, c.value, "-cache", "")
		if want := "dpfl mechanism: -" + c.flag + ": " + yamlReason + "\n"; code != 2 || errs != want {
			t.Errorf("-%s %s: exit %d %q, want %q", c.flag, c.value, code, errs, want)
		}
	}
	// The learning-rate schedule's flags are the server section's keys.
	const server = "name: t\nrounds: 8\ndata: {dataset: mnist, clients: 100}\nmodel: {kind: logreg}\nclient: {lr: 0.1}\n" +
		"participation: {cohort: 10}\naggregator: {clip: 1, noise_multiplier: 0}\nserver: {lr: 1, %s}\n"
	for _, c := range []struct {
		yaml, key string
		flags     []string
	}{
		{"lr_schedule: step", "lr_schedule", []string{"-lr-schedule", "step"}},
		{"lr_schedule: linear", "lr_schedule", []string{"-lr-schedule", "linear"}},
		{"warmup_rounds: 2", "warmup_rounds", []string{"-warmup", "2"}},
		{"lr_schedule: cosine, cooldown_rounds: 9", "cooldown_rounds", []string{"-lr-schedule", "cosine", "-cooldown", "9"}},
		{"lr_schedule: linear, cooldown_rounds: 2, final_lr_fraction: 2", "final_lr_fraction", []string{"-lr-schedule", "linear", "-cooldown", "2", "-final-lr", "2"}},
	} {
		_, _, err := experiments.Load([]byte(fmt.Sprintf(server, c.yaml)), "c.yaml")
		_, yamlReason, ok := strings.Cut(fmt.Sprint(err), "server."+c.key+": ")
		if !ok {
			t.Fatalf("%s: %v", c.yaml, err)
		}
		yamlReason, _, _ = strings.Cut(yamlReason, "\n")
		code, _, errs := runMechanism(t, append([]string{"-n", "8", "-strategy", "identity", "-cache", ""}, c.flags...)...)
		if want := "dpfl mechanism: -" + scheduleKeyFlags[c.key] + ": " + yamlReason + "\n"; code != 2 || errs != want {
			t.Errorf("%v: exit %d %q, want %q", c.flags, code, errs, want)
		}
	}
	for _, args := range [][]string{
		{"-strategy", "bandmf", "-participation", "kb", "-k", "2", "-b", "4", "-bands", "0"},
		{"-strategy", "blt", "-participation", "minsep", "-k", "2", "-b", "4", "-buffers", "0"},
		{"-strategy", "nu", "-nu-bands", "0"},
		{"-strategy", "tree", "-restart-every", "0"},
	} {
		if code, out, errs := runMechanism(t, append([]string{"-n", "8", "-cache", ""}, args...)...); code != 0 || out == "" {
			t.Errorf("%v: exit %d %q", args, code, errs)
		}
	}
}
