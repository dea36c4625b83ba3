package figures

import (
	"math"
	"path/filepath"
	"strconv"
	"testing"

	"dpfl/results"
)

// TestPairedTClosedForm checks the paired t test against the closed form of
// Student's t distribution function with 4 degrees of freedom,
// F(x) = 1/2 + (3/8)·(x/√u)·(1 − x²/(12u)) with u = 1 + x²/4, an oracle
// independent of gonum's distuv.
func TestPairedTClosedForm(t *testing.T) {
	cdf4 := func(x float64) float64 {
		u := 1 + x*x/4
		return 0.5 + 3.0/8*x/math.Sqrt(u)*(1-x*x/(12*u))
	}
	for _, d := range [][]float64{{1, 2, 3, 4, 5}, {0.3, -0.1, 0.2, 0.05, 0.4}, {-2, -1.5, -3, 0.5, -1}} {
		mean, tt, p := pairedT(d)
		var m, ss float64
		for _, x := range d {
			m += x / 5
		}
		for _, x := range d {
			ss += (x - m) * (x - m)
		}
		want := m / math.Sqrt(ss/4/5)
		wantP := 2 * (1 - cdf4(math.Abs(want)))
		if math.Abs(mean-m) > 1e-15 || math.Abs(tt-want) > 1e-12 || math.Abs(p-wantP) > 1e-12 {
			t.Errorf("%v: mean %g t %g p %g, want %g %g %g", d, mean, tt, p, m, want, wantP)
		}
	}
	// d = 1..5: t = 3/√(2.5/5) = 4.2426, p = 0.013236 (two-sided, 4 df).
	if _, tt, p := pairedT([]float64{1, 2, 3, 4, 5}); math.Abs(tt-4.242640687) > 1e-9 || math.Abs(p-0.0132356) > 1e-6 {
		t.Errorf("1..5: t %g p %g", tt, p)
	}
	if _, _, p := pairedT([]float64{0.1}); !math.IsNaN(p) {
		t.Errorf("one pair: p %g, want NaN", p)
	}
}

// writeTunedGrid writes a tuned grid's index: series a and b at ε = 4, seed 1
// tries server.lr 0.1 and 1, the other seeds run the chosen 0.1 only. a's
// accuracy is b's plus diff(seed).
func writeTunedGrid(t *testing.T, seeds int, diff func(seed int) float64) string {
	dir := t.TempDir()
	header := append(append([]string{}, indexColumns...), "server.lr", "seed")
	var rows [][]string
	add := func(agg, lr string, seed int, acc, val float64) {
		d := agg + "-" + lr + "-" + strconv.Itoa(seed)
		row := map[string]string{"run_id": d, "dir": d, "status": "complete", "aggregator.kind": agg, "seed": strconv.Itoa(seed),
			"epsilon": "4", "delta": "1e-05", "accountant": "pld",
			"final_accuracy": strconv.FormatFloat(acc, 'g', -1, 64), "final_val_accuracy": strconv.FormatFloat(val, 'g', -1, 64)}
		var rec []string
		for _, h := range indexColumns {
			rec = append(rec, row[h])
		}
		rows = append(rows, append(rec, lr, strconv.Itoa(seed)))
	}
	for _, agg := range []string{"a", "b"} {
		add(agg, "1", 1, 0.1, 0.1)
		for s := 1; s <= seeds; s++ {
			base := 0.5 + 0.01*float64(s%3)
			acc := base
			if agg == "a" {
				acc += diff(s)
			}
			add(agg, "0.1", s, acc, 0.9) // seed 1 is the tuning seed (an outlier: 0.9 test accuracy would bias a mean)
		}
	}
	if err := results.WriteCSV(filepath.Join(dir, "index.csv"), header, rows); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestProtocolVerdicts: a consistent gap over 5 held-out seeds is
// separated by the paired test; the same gap over 2 held-out seeds, and a
// gap whose sign varies (the negative control), are not; the tuning seed is
// in neither mean.
func TestProtocolVerdicts(t *testing.T) {
	gap := func(s int) float64 { return 0.02 + 0.001*float64(s) }
	noise := func(s int) float64 { return 0.02 * float64(1-2*(s%2)) }
	cases := []struct {
		name    string
		seeds   int
		diff    func(int) float64
		verdict string
	}{
		{"gap, 5 held-out", 6, gap, Above},
		{"gap, 2 held-out", 3, gap, NotSeparated},
		{"sign varies, 5 held-out", 6, noise, NotSeparated},
		{"negative gap, 5 held-out", 6, func(s int) float64 { return -gap(s) }, Below},
	}
	for _, c := range cases {
		s, err := Summarize(writeTunedGrid(t, c.seeds, c.diff), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Points) != 2 {
			t.Fatalf("%s: points %+v", c.name, s.Points)
		}
		a, b := s.Points[0], s.Points[1]
		for _, p := range []Point{a, b} {
			if p.Seeds != c.seeds-1 || len(p.Tuning) != 1 || p.Tuning[0] != "1" || p.TunedOnReported {
				t.Errorf("%s: %s reports %d seeds, tuning %v (%v), want %d held-out and tuning [1]", c.name, p.Series, p.Seeds, p.Tuning, p.TunedOnReported, c.seeds-1)
			}
			for _, v := range p.PerSeed {
				if v.Seed == "1" {
					t.Errorf("%s: the tuning seed is in %s's reported values", c.name, p.Series)
				}
			}
		}
		cmp := s.Comparisons()
		if len(cmp) != 1 || cmp[0].Verdict != c.verdict {
			t.Errorf("%s: comparisons %+v, want %s", c.name, cmp, c.verdict)
		}
	}
}

// TestProtocolFullGrid: when every seed tried every setting, nothing is
// held out; the point reports all seeds, marked, and is never separated.
func TestProtocolFullGrid(t *testing.T) {
	dir := t.TempDir()
	header := append(append([]string{}, indexColumns...), "server.lr", "seed")
	var rows [][]string
	for _, agg := range []string{"a", "b"} {
		for _, lr := range []string{"0.1", "1"} {
			for s := 1; s <= 6; s++ {
				acc := 0.5
				if agg == "a" {
					acc = 0.9
				}
				d := agg + lr + strconv.Itoa(s)
				row := map[string]string{"run_id": d, "dir": d, "status": "complete", "aggregator.kind": agg, "seed": strconv.Itoa(s),
					"epsilon": "4", "final_accuracy": strconv.FormatFloat(acc+0.001*float64(s), 'g', -1, 64), "final_val_accuracy": "0.5"}
				var rec []string
				for _, h := range indexColumns {
					rec = append(rec, row[h])
				}
				rows = append(rows, append(rec, lr, strconv.Itoa(s)))
			}
		}
	}
	if err := results.WriteCSV(filepath.Join(dir, "index.csv"), header, rows); err != nil {
		t.Fatal(err)
	}
	s, err := Summarize(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Points[0]; !p.TunedOnReported || p.Seeds != 6 {
		t.Fatalf("full grid point %+v: want all 6 seeds, marked tuned on reported", p)
	}
	if c := s.Comparisons()[0]; c.Verdict != NotSeparated || c.Reason != "hyperparameters chosen on the reported seeds" {
		t.Errorf("full grid comparison %+v", c)
	}
}
