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

// TestCheckpointSizeBounded: a checkpoint with the largest state a model of
// its size has (two float64 values per parameter, as Adam keeps, and an
// aggregator's value) is within CheckpointMaxBytes and is read; the same
// file grown to 10 GB (sparse) is refused before it is read, allocating
// next to nothing; one that is a device is a bad checkpoint, not a hang.
func TestCheckpointSizeBounded(t *testing.T) {
	params := 1000
	c := &Checkpoint{RunID: "0123456789", Round: 3, Params: make([]float32, params), Momentum: make([]float64, 2*params), Aggregator: []float64{1}}
	path := filepath.Join(t.TempDir(), "checkpoint.bin")
	if err := WriteCheckpoint(path, c); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Size() > CheckpointMaxBytes(params) {
		t.Fatalf("a %d-byte checkpoint is over the bound %d", st.Size(), CheckpointMaxBytes(params))
	}
	if got, err := ReadCheckpointFor(path, params); err != nil || len(got.Momentum) != 2*params {
		t.Fatalf("%v", err)
	}
	if err := os.Truncate(path, 10<<30); err != nil {
		t.Skipf("no sparse 10 GB file here: %v", err)
	}
	var err error
	if got := allocated(func() { _, err = ReadCheckpointFor(path, params) }); got > 1<<20 {
		t.Fatalf("a 10 GB checkpoint allocated %d bytes", got)
	}
	if !errors.Is(err, ErrBadCheckpoint) || !strings.Contains(err.Error(), "more than the") {
		t.Fatalf("a 10 GB checkpoint: %v", err)
	}
	if _, err := ReadCheckpoint(os.DevNull); !errors.Is(err, ErrBadCheckpoint) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("%s: %v", os.DevNull, err)
	}
}
