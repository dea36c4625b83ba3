package experiments

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/mat"

	"dpfl/aggregators"
	"dpfl/aggregators/strategy"
	"dpfl/participation"
	"dpfl/results"
)

// TestCommittedNoiseNorms checks the noise the committed amplified BandMF
// (4 and 8 bands) and Multi-epoch MF runs of
// results/paper/centralized-mnist-bandmf added, against their strategies
// built here from the grid's stated parameters (2,400 rounds of prefix
// sums; BandMF's bands, Multi-epoch MF's (k,b) = (20, 120)). The noise of
// round t is noise_std · (C⁻¹z)_t with z standard normal in d = 59,802
// dimensions (the CNN's parameters), so (noise_norm / (noise_std ·
// ‖row_t(C⁻¹)‖))² is a χ² draw with d degrees of freedom: each evaluated
// round's must lie within 6 standard deviations (√(2d)) of d. The rows
// differ along the run (BandMF's from 3.75 at round 240 to 1.08 at the
// last). Negative control: BandMF's noise measured against the rows of
// C = I (independent noise, as DP-SGD's: norm 1) fails at every round.
// Multi-epoch MF's strategy takes a minute or two to optimize, so its runs
// are checked only with DPFL_LONG=1 (as .ci/run does).
func TestCommittedNoiseNorms(t *testing.T) {
	const n, d = 2400, 59802
	long := os.Getenv("DPFL_LONG") != ""
	if !long {
		t.Log("Multi-epoch MF's runs not checked: set DPFL_LONG=1 (as .ci/run does)")
	}
	dir := filepath.Join("..", "results", "paper", "centralized-mnist-bandmf")
	runs, err := filepath.Glob(filepath.Join(dir, "*", "summary.json"))
	if err != nil || len(runs) == 0 {
		t.Fatalf("no committed runs in %s (%v)", dir, err)
	}
	ctx := context.Background()
	rows := map[string][]float64{} // strategy → ‖row_t(C⁻¹)‖ for t = 1..n
	rowNorms := func(name string, bands int, p participation.Pattern) []float64 {
		t.Helper()
		key := name + strconv.Itoa(bands)
		if r, ok := rows[key]; ok {
			return r
		}
		s, err := strategy.Build(ctx, name, strategy.Config{Workload: strategy.Prefix(n), Participation: p, Bands: bands})
		if err != nil {
			t.Fatal(err)
		}
		w, err := aggregators.NoiseWeights(s)
		if err != nil {
			t.Fatal(err)
		}
		r := make([]float64, n)
		for i := range r {
			r[i] = mat.Norm(w.RowView(i), 2)
		}
		rows[key] = r
		return r
	}
	chi := func(norm, std, row float64) float64 { // in standard deviations of χ²_d
		q := norm / (std * row)
		return (q*q - d) / math.Sqrt(2*d)
	}
	checked := map[string]int{}
	for _, f := range runs {
		s, err := results.ReadSummary(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(filepath.Dir(f), "config.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		cfg, _, err := Load(b, "config.yaml")
		if err != nil {
			t.Fatal(err)
		}
		var r, control []float64
		switch ag := cfg.Aggregator; {
		case ag.Kind == "bandmf" && (ag.Bands == 4 || ag.Bands == 8):
			r = rowNorms("bandmf", ag.Bands, participation.Turns(n/ag.Bands, ag.Bands))
			control = rowNorms("identity", 0, participation.Turns(n, 1))
		case ag.Kind == "optimal-mf" && ag.MultiEpoch && long:
			r = rowNorms("multi-epoch", 0, participation.Turns(20, 120))
		default:
			continue
		}
		tab, err := results.ReadMetricsTable(filepath.Join(filepath.Dir(f), "metrics.csv"))
		if err != nil {
			t.Fatal(err)
		}
		failed := 0
		for i := range tab.Rows {
			round, err1 := strconv.Atoi(tab.Get(i, "round"))
			norm, err2 := strconv.ParseFloat(tab.Get(i, "noise_norm"), 64)
			if err1 != nil || err2 != nil || round < 1 || round > n {
				t.Fatalf("%s row %d: round %q, noise_norm %q", f, i, tab.Get(i, "round"), tab.Get(i, "noise_norm"))
			}
			if z := chi(norm, s.NoiseStd, r[round-1]); math.Abs(z) > 6 {
				t.Errorf("%s round %d: noise norm %.6g is %.1f standard deviations from its strategy's (row norm %.4f)", filepath.Base(filepath.Dir(f)), round, norm, z, r[round-1])
			}
			if control != nil && math.Abs(chi(norm, s.NoiseStd, control[round-1])) <= 6 {
				failed++
			}
		}
		if failed > 0 {
			t.Errorf("%s: the control (independent noise's rows) passed at %d rounds", filepath.Base(filepath.Dir(f)), failed)
		}
		checked[cfg.Aggregator.Kind]++
	}
	if checked["bandmf"] == 0 || long && checked["optimal-mf"] == 0 {
		t.Fatalf("runs checked: %v", checked)
	}
	t.Logf("runs checked: %v", checked)
}
