package results

import (
	"math"
	"os"
	"path/filepath"
	"slices"
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
	want := strings.Join(MetricsHeader, ",") + "\n,,5,0.5,0.25,0.875,+Inf,,,,,3,0,0\n"
	if string(b) != want {
		t.Fatalf("metrics.csv:\n%s\nwant\n%s", b, want)
	}
	// Every row names its run and what its epsilon is, in columns of
	// their own; the header is the same for every run.
	m.SetRun("abc", 7)
	m.SetEpsilon(EpsilonInfo{Accountant: "exact-gdp", Delta: 1e-6, Adjacency: "zero-out", WholeRun: true})
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "metrics.csv"))
	want = strings.Join(MetricsHeader, ",") + "\nabc,7,5,0.5,0.25,0.875,+Inf,exact-gdp,1e-06,zero-out,whole_run,3,0,0\n"
	if string(b) != want {
		t.Fatalf("labelled metrics.csv:\n%s\nwant\n%s", b, want)
	}
	for _, c := range []struct {
		method   string
		delta    float64
		wholeRun bool
		lab      string
	}{
		{"rdp-cks", 1e-5, false, "rdp-cks, δ = 1e-05"},
		{"exact-gdp", 1e-6, true, "whole run, exact-gdp, δ = 1e-06"},
		{"", 1e-5, false, "no accountant"},
	} {
		if lab := EpsilonLabel(c.method, c.delta, c.wholeRun); lab != c.lab {
			t.Errorf("%+v: label %q", c, lab)
		}
	}
	// The current form and the earlier ones (the epsilon column named after
	// its accountant and delta, or plain) read back, as rows and as a table
	// in the current form; a table whose epsilon column is not one does not.
	for _, c := range []struct{ head, row, info string }{
		{strings.Join(MetricsHeader, ","), "r1,3,5,0.5,0.25,0.875,1.5,pld,1e-05,add/remove,through_round,3,0,0", "pld,1e-05,add/remove,through_round"},
		{"round,train_loss,test_loss,test_accuracy,epsilon[pld;delta=1e-05],cohort,clip_fraction,noise_norm", "5,0.5,0.25,0.875,1.5,3,0,0", "pld,1e-05,,through_round"},
		{"round,train_loss,test_loss,test_accuracy,epsilon[exact-gdp;delta=0.0001;whole_run],cohort,clip_fraction,noise_norm,clip_norm", "5,0.5,0.25,0.875,1.5,3,0,0,0.7", "exact-gdp,0.0001,,whole_run"},
		{"round,train_loss,test_loss,test_accuracy,epsilon,cohort,clip_fraction,noise_norm", "5,0.5,0.25,0.875,1.5,3,0,0", ",,,"},
		{"round,train_loss,test_loss,test_accuracy,sigma,cohort,clip_fraction,noise_norm", "5,0.5,0.25,0.875,1.5,3,0,0", ""},
	} {
		p := filepath.Join(dir, "m.csv")
		os.WriteFile(p, []byte(c.head+"\n"+c.row+"\n"), 0o644)
		rows, err := ReadMetrics(p)
		tab, terr := ReadMetricsTable(p)
		if c.info == "" {
			if err == nil || terr == nil {
				t.Error("a table with sigma in the epsilon column was read as metrics")
			}
			continue
		}
		if err != nil || len(rows) != 1 || rows[0].Epsilon != 1.5 || rows[0].Round != 5 || rows[0].TestAccuracy != 0.875 {
			t.Errorf("header %q: %v, %v", c.head, rows, err)
		}
		if terr != nil || len(tab.Rows) != 1 || !slices.Equal(tab.Header[:len(MetricsHeader)], MetricsHeader) {
			t.Fatalf("header %q as a table: %v, %v", c.head, tab, terr)
		}
		info := []string{tab.Get(0, "accountant"), tab.Get(0, "delta"), tab.Get(0, "adjacency"), tab.Get(0, "epsilon_scope")}
		if got := strings.Join(info, ","); got != c.info || tab.Get(0, "epsilon") != "1.5" || tab.Get(0, "round") != "5" || tab.Get(0, "noise_norm") != "0" {
			t.Errorf("header %q as a table: %v, want epsilon info %s", c.head, tab.Rows[0], c.info)
		}
		if strings.Contains(c.head, "clip_norm") && (rows[0].ClipNorm != 0.7 || tab.Get(0, ClipNormColumn) != "0.7") {
			t.Errorf("clip_norm not read: %v, %v", rows[0], tab.Rows[0])
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

// TestReadIndexOldForm: an index written before the dotted names reads with
// aggregator.kind and participation.kind (once, where the grid also varied
// aggregator.kind) and its "null" cells of varied paths empty; fixed cells
// are left alone.
func TestReadIndexOldForm(t *testing.T) {
	p := filepath.Join(t.TempDir(), "index.csv")
	os.WriteFile(p, []byte("run_id,aggregator,participation,seed,epsilon,aggregator.kind,participation.q\n"+
		"a,tree,kb,1,2,tree,null\nb,dpfedavg,poisson,1,inf,dpfedavg,0.5\n"), 0o644)
	tab, err := ReadIndex(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tab.Header, ","); got != "run_id,participation.kind,seed,epsilon,aggregator.kind,participation.q" {
		t.Fatalf("header %s", got)
	}
	if tab.Get(0, "participation.kind") != "kb" || tab.Get(0, "aggregator.kind") != "tree" || tab.Get(0, "participation.q") != "" || tab.Get(1, "participation.q") != "0.5" {
		t.Fatalf("rows %v", tab.Rows)
	}
}

// TestWriteRounds: rounds.csv has one row per evaluated round of each
// finished run, the run's index values beside metrics.csv's cells, copied
// as written (an old-form metrics.csv in the current columns); unfinished
// runs are left out.
func TestWriteRounds(t *testing.T) {
	dir := t.TempDir()
	header := append(append([]string{}, IndexFixedColumns...), "server.lr")
	row := func(id, status, lr string) []string {
		r := make([]string, len(header))
		for i, h := range header {
			r[i] = map[string]string{"run_id": id, "dir": "r-" + id, "status": status, "seed": "3",
				"aggregator.kind": "tree", "participation.kind": "kb", "server.lr": lr}[h]
		}
		return r
	}
	if err := WriteCSV(filepath.Join(dir, "index.csv"), header, [][]string{row("a", "complete", "0.1"), row("b", "diverged", ""), row("c", "pending", "1")}); err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(filepath.Join(dir, "r-a", "metrics.csv"))
	m.SetRun("a", 3)
	m.SetEpsilon(EpsilonInfo{Accountant: "exact-gdp", Delta: 1e-5, Adjacency: "zero-out", WholeRun: true})
	m.Add(MetricsRow{Round: 5, TestAccuracy: 0.25, Epsilon: 1.5})
	m.Add(MetricsRow{Round: 10, TestAccuracy: 0.5, Epsilon: 1.5})
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "r-b"), 0o755)
	os.WriteFile(filepath.Join(dir, "r-b", "metrics.csv"), []byte("round,train_loss,test_loss,test_accuracy,epsilon[rdp-cks;delta=1e-05],cohort,clip_fraction,noise_norm\n5,NaN,NaN,0.1,0.30000000000000004,7,1,2\n"), 0o644)
	path, err := WriteRounds(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	want := "run_id,status,seed,aggregator.kind,participation.kind,server.lr,round,train_loss,test_loss,test_accuracy,epsilon,accountant,delta,adjacency,epsilon_scope,cohort,clip_fraction,noise_norm\n" +
		"a,complete,3,tree,kb,0.1,5,0,0,0.25,1.5,exact-gdp,1e-05,zero-out,whole_run,0,0,0\n" +
		"a,complete,3,tree,kb,0.1,10,0,0,0.5,1.5,exact-gdp,1e-05,zero-out,whole_run,0,0,0\n" +
		"b,diverged,3,tree,kb,,5,NaN,NaN,0.1,0.30000000000000004,rdp-cks,1e-05,,through_round,7,1,2\n"
	if string(b) != want {
		t.Fatalf("rounds.csv:\n%s\nwant\n%s", b, want)
	}
}
