package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// readEvents parses a JSON-lines event file.
func readEvents(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d: %v: %s", len(out)+1, err, sc.Text())
		}
		out = append(out, m)
	}
	return out
}

// TestRunEvents: dpfl run -events FILE writes a JSON line per round and
// then the run's end, every line a JSON object with its time and kind; a
// second run appends (here: the already complete run's end again).
func TestRunEvents(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(cfg, []byte(tinyConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	evPath := filepath.Join(dir, "events.jsonl")
	out := filepath.Join(dir, "out")
	if code, stdout, errs := runCLI("run", cfg, "-out", out, "-quiet", "-events", evPath); code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, errs)
	}
	ev := readEvents(t, evPath)
	if len(ev) != 3 {
		t.Fatalf("%d events, want 2 rounds and the end: %v", len(ev), ev)
	}
	for i, e := range ev[:2] {
		if e["event"] != "round" || e["round"] != float64(i+1) || e["rounds"] != float64(2) || e["run"] != "tiny" || e["time"] == nil {
			t.Errorf("event %d: %v", i, e)
		}
	}
	if end := ev[2]; end["event"] != "end" || end["status"] != "complete" || end["run_id"] == "" || end["dir"] == nil {
		t.Errorf("end event %v", end)
	}
	if code, _, _ := runCLI("run", cfg, "-out", out, "-quiet", "-events", evPath); code != exitOK {
		t.Fatalf("rerun: exit %d", code)
	}
	if ev := readEvents(t, evPath); len(ev) != 4 || ev[3]["event"] != "end" {
		t.Errorf("after a rerun: %d events, last %v; want the end appended", len(ev), ev[len(ev)-1])
	}
	if code, _, errs := runCLI("run", cfg, "-out", out, "-quiet", "-events", filepath.Join(dir, "no", "such", "dir", "e.jsonl")); code != exitUsage || errs == "" {
		t.Errorf("unwritable -events: exit %d, %q", code, errs)
	}
}

// TestGridEvents: dpfl grid -events FILE writes each point's start, rounds
// and done, naming the point and its run ID.
func TestGridEvents(t *testing.T) {
	dir := t.TempDir()
	grid := writeTwoSeedGrid(t, dir)
	evPath := filepath.Join(dir, "events.jsonl")
	if code, stdout, errs := runCLI("grid", "-out", filepath.Join(dir, "out"), "-quiet", "-parallel", "1", "-events", evPath, grid); code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, errs)
	}
	count := map[string]int{}
	points := map[any]bool{}
	for _, e := range readEvents(t, evPath) {
		count[e["event"].(string)]++
		points[e["point"]] = true
		if e["run_id"] == nil || e["run_id"] == "" {
			t.Errorf("event without a run ID: %v", e)
		}
	}
	if count["start"] != 2 || count["round"] != 4 || count["done"] != 2 || len(points) != 2 {
		t.Errorf("events %v over points %v; want 2 starts, 4 rounds, 2 dones", count, points)
	}
}
