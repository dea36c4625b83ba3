package results

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dpfl/privacy"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "f.txt")
	if err := WriteFileAtomic(p, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(p, []byte("two")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "two" {
		t.Fatalf("content %q", b)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
	// A folder that cannot be created reports an error and writes nothing.
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o644)
	if err := WriteFileAtomic(filepath.Join(blocker, "x"), []byte("y")); err == nil {
		t.Fatal("writing under a file succeeded")
	}
}

func TestMetricsAndSummary(t *testing.T) {
	dir := t.TempDir()
	m := NewMetrics(filepath.Join(dir, "metrics.csv"))
	m.Add(MetricsRow{Round: 5, TrainLoss: 0.5, TestLoss: 0.25, TestAccuracy: 0.875, Epsilon: math.Inf(1), Cohort: 3})
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "metrics.csv"))
	want := strings.Join(MetricsHeader, ",") + "\n5,0.5,0.25,0.875,+Inf,3,0,0\n"
	if string(b) != want {
		t.Fatalf("metrics.csv:\n%s\nwant\n%s", b, want)
	}
	// The epsilon column's header carries its accountant and delta, and
	// says when every row is the whole run's bound.
	for _, c := range []struct {
		method   string
		delta    float64
		wholeRun bool
		col, lab string
	}{
		{"rdp-cks", 1e-5, false, "epsilon[rdp-cks;delta=1e-05]", "rdp-cks, δ = 1e-05"},
		{"exact-gdp", 1e-6, true, "epsilon[exact-gdp;delta=1e-06;whole_run]", "whole run, exact-gdp, δ = 1e-06"},
		{"", 1e-5, false, "epsilon", "no accountant"},
	} {
		if col, lab := EpsilonColumn(c.method, c.delta, c.wholeRun), EpsilonLabel(c.method, c.delta, c.wholeRun); col != c.col || lab != c.lab {
			t.Errorf("%+v: column %q, label %q", c, col, lab)
		}
	}
	m.SetEpsilonColumn(EpsilonColumn("pld", 1e-5, false))
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "metrics.csv"))
	if !strings.HasPrefix(string(b), "round,train_loss,test_loss,test_accuracy,epsilon[pld;delta=1e-05],cohort,") {
		t.Fatalf("labelled metrics.csv:\n%s", b)
	}
	// Both the labelled and the old plain header read back; a table whose
	// fifth column is not an epsilon does not.
	for _, head := range []string{"epsilon[pld;delta=1e-05]", "epsilon", "sigma"} {
		p := filepath.Join(dir, "m.csv")
		os.WriteFile(p, []byte("round,train_loss,test_loss,test_accuracy,"+head+",cohort,clip_fraction,noise_norm\n5,0.5,0.25,0.875,1.5,3,0,0\n"), 0o644)
		rows, err := ReadMetrics(p)
		if head == "sigma" {
			if err == nil {
				t.Error("a table with sigma in the epsilon column was read as metrics")
			}
			continue
		}
		if err != nil || len(rows) != 1 || rows[0].Epsilon != 1.5 {
			t.Errorf("header %q: %v, %v", head, rows, err)
		}
	}
	e := 2.5
	s := Summary{RunID: "abc", Report: privacy.Report{Epsilon: &e, Delta: 1e-5}, Status: "complete"}
	p := filepath.Join(dir, "summary.json")
	if err := WriteJSON(p, s); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSummary(p)
	if err != nil || got.RunID != "abc" || *got.Epsilon != 2.5 || got.Delta != 1e-5 {
		t.Fatalf("read back %+v, %v", got, err)
	}
}
