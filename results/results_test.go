package results

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	e := 2.5
	s := Summary{RunID: "abc", Epsilon: &e, Delta: 1e-5, Status: "complete"}
	p := filepath.Join(dir, "summary.json")
	if err := WriteJSON(p, s); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSummary(p)
	if err != nil || got.RunID != "abc" || *got.Epsilon != 2.5 || got.Delta != 1e-5 {
		t.Fatalf("read back %+v, %v", got, err)
	}
}
