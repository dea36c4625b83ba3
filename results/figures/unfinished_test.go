package figures

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dpfl/results"
)

// writeTuned writes the index.csv of a tuned grid (tune: on seed 1 over
// server.lr 0.5 and 1, then seeds 2 and 3 at the chosen setting) with two
// series at ε = 2. Series "b" has finished: its choice (lr 1, better on
// seed 1) and both held-out seeds. Series "a" stands as a grid stopped
// midway leaves it: its tuning runs are done but its held-out seeds are
// aStatus (pending), so its only finished runs are on the tuning seed. With
// aStatus waiting, "a" stopped earlier: before its choice, with one tuning
// run finished and the other seeds waiting at every setting.
func writeTuned(t *testing.T, aStatus string, series ...string) string {
	dir := t.TempDir()
	header := append(append([]string{}, indexColumns...), "privacy.epsilon", "server.lr", "name")
	var rows [][]string
	n := 0
	add := func(name, lr, seed, status, acc string) {
		n++
		d := name + "-" + string(rune('a'+n))
		row := map[string]string{"run_id": d, "dir": d, "status": status, "aggregator.kind": "dpfedavg", "seed": seed,
			"delta": "1e-05", "participation.kind": "poisson"}
		if status == "complete" {
			row["epsilon"], row["accountant"], row["final_accuracy"], row["final_val_accuracy"] = "2", "rdp-cks", acc, acc
			row["noise_multiplier"] = "1.5"
			m := results.NewMetrics(filepath.Join(dir, d, "metrics.csv"))
			m.Add(results.MetricsRow{Round: 10, TestAccuracy: 0.5})
			if err := m.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		var rec []string
		for _, h := range indexColumns {
			rec = append(rec, row[h])
		}
		rows = append(rows, append(rec, "2", lr, name))
	}
	for _, name := range series {
		st := "complete"
		if name == "a" {
			st = aStatus
		}
		if st == "waiting" { // stopped before the choice: seed 1 has run one setting
			add(name, "0.5", "1", "complete", "0.6")
			add(name, "1", "1", "pending", "")
			for _, seed := range []string{"2", "3"} {
				add(name, "0.5", seed, st, "")
				add(name, "1", seed, st, "")
			}
			continue
		}
		add(name, "0.5", "1", "complete", "0.6")
		add(name, "1", "1", "complete", "0.9")
		add(name, "0.5", "2", "not-chosen", "")
		add(name, "1", "2", st, "0.7")
		add(name, "0.5", "3", "not-chosen", "")
		add(name, "1", "3", st, "0.8")
	}
	if err := results.WriteCSV(filepath.Join(dir, "index.csv"), header, rows); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestUnfinishedPointWithheld: a point whose runs have not all finished is
// in neither the figures nor best.csv, so a grid stopped after a point's
// tuning runs never shows the tuning seed's accuracy as a result; the
// figure and the report name it instead. When no point has finished,
// Summarize says so (ErrNoFinishedPoint). Negative control: the same index
// with the held-out runs finished plots "a" at their mean.
func TestUnfinishedPointWithheld(t *testing.T) {
	for _, st := range []string{"pending", "interrupted", "failed"} {
		s, err := Summarize(writeTuned(t, st, "a", "b"), Options{By: "name"})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Points) != 1 || s.Points[0].Series != "b" || s.Points[0].Seeds != 2 {
			t.Fatalf("%s: points %+v; want only b, on its 2 held-out seeds", st, s.Points)
		}
		if len(s.Withheld) != 1 || s.Withheld[0] != (Unfinished{Series: "a", X: 2, Finished: 2, Waiting: 2}) {
			t.Errorf("%s: withheld %+v; want a at 2 with 2 of 4 runs finished", st, s.Withheld)
		}
	}
	// Before the choice, a waiting seed is one run to come, not one per
	// setting: a has 1 of 4 runs (2 tuning, 2 held-out), not 1 of 6 rows.
	s, err := Summarize(writeTuned(t, "waiting", "a", "b"), Options{By: "name"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Points) != 1 || len(s.Withheld) != 1 || s.Withheld[0] != (Unfinished{Series: "a", X: 2, Finished: 1, Waiting: 3}) || s.Skipped != 3 {
		t.Errorf("waiting: points %+v, withheld %+v, %d runs unfinished; want a withheld with 1 of 4 runs finished, 3 unfinished", s.Points, s.Withheld, s.Skipped)
	}
	// With x a result column (sigma), a pending run's x is not known yet, so
	// it holds back its series' points.
	s, err = Summarize(writeTuned(t, "pending", "a", "b"), Options{By: "name", X: "sigma"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Points) != 1 || s.Points[0].Series != "b" || len(s.Withheld) != 1 || s.Withheld[0].Series != "a" {
		t.Errorf("x = sigma: points %+v, withheld %+v; want b plotted and a withheld", s.Points, s.Withheld)
	}

	dir := writeTuned(t, "pending", "a", "b")
	if _, err := Write(dir, Options{By: "name"}); err != nil {
		t.Fatal(err)
	}
	best, err := os.ReadFile(filepath.Join(dir, BestTable))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(best)), "\n")[1:] {
		if !strings.HasPrefix(line, "b,") {
			t.Errorf("best.csv has a row for an unfinished point: %s", line)
		}
	}
	report, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	const note = "Not plotted until all their runs finish: a at ε = 2 (2 of 4 runs finished)."
	if !strings.Contains(string(report), note) {
		t.Errorf("report.html does not say %q", note)
	}

	if _, err := Summarize(writeTuned(t, "pending", "a"), Options{By: "name"}); !errors.Is(err, ErrNoFinishedPoint) ||
		!strings.Contains(err.Error(), "a at ε = 2 (2 of 4 runs finished)") {
		t.Errorf("only an unfinished point: %v; want ErrNoFinishedPoint naming it", err)
	}

	s, err = Summarize(writeTuned(t, "complete", "a", "b"), Options{By: "name"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Points) != 2 || len(s.Withheld) != 0 || s.Points[0].Series != "a" || s.Points[0].Mean != 0.75 ||
		strings.Join(s.Points[0].Tuning, ",") != "1" {
		t.Errorf("finished: points %+v, withheld %+v; want a at 0.75 (seeds 2, 3; tuned on 1) and b", s.Points, s.Withheld)
	}
}
