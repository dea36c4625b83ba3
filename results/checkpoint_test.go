package results

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOldCheckpointRefused: a version-1 checkpoint (older model layout) is
// not resumed from, even with a valid checksum; a version-2 one is read.
func TestOldCheckpointRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoint.bin")
	c := &Checkpoint{RunID: "abc", Round: 3, Params: []float32{1, 2}}
	if err := WriteCheckpoint(path, c); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadCheckpoint(path); err != nil || got.Round != 3 {
		t.Fatalf("version 2: %v %+v", err, got)
	}
	b, _ := os.ReadFile(path)
	body := append([]byte(oldCheckpointMagic), b[len(checkpointMagic):len(b)-sha256.Size]...)
	sum := sha256.Sum256(body)
	os.WriteFile(path, append(body, sum[:]...), 0o644)
	if _, err := ReadCheckpoint(path); !errors.Is(err, ErrBadCheckpoint) || !strings.Contains(err.Error(), "older dpfl") {
		t.Fatalf("version 1: %v; want ErrBadCheckpoint naming the older format", err)
	}
}

// TestCheckpointAggregatorState: the aggregator's state (adaptive
// clipping's clip norm) round-trips; a checkpoint without it has the bytes
// of the format before the field existed (its fields end at the momentum).
func TestCheckpointAggregatorState(t *testing.T) {
	dir := t.TempDir()
	with := &Checkpoint{RunID: "abc", Round: 3, Params: []float32{1, 2}, Momentum: []float64{0.5, 0.25}, Aggregator: []float64{0.37}}
	p := filepath.Join(dir, "a.bin")
	if err := WriteCheckpoint(p, with); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCheckpoint(p)
	if err != nil || len(got.Aggregator) != 1 || got.Aggregator[0] != 0.37 || got.Momentum[1] != 0.25 {
		t.Fatalf("%v %+v", err, got)
	}
	without := *with
	without.Aggregator = nil
	q := filepath.Join(dir, "b.bin")
	if err := WriteCheckpoint(q, &without); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(p)
	b, _ := os.ReadFile(q)
	if len(a) != len(b)+16 {
		t.Fatalf("with state %d bytes, without %d: want 16 more (length and one float64)", len(a), len(b))
	}
	if got, err := ReadCheckpoint(q); err != nil || got.Aggregator != nil {
		t.Fatalf("%v %+v", err, got)
	}
}
