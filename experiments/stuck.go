package experiments

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// StuckWarning reads a run folder's metrics.csv and, when the test accuracy
// of no later evaluation rose above the first evaluation's (training stuck,
// often at chance), returns a one-line warning; else "". It reads only.
func StuckWarning(dir string) (string, error) {
	f, err := os.Open(filepath.Join(dir, "metrics.csv"))
	if err != nil {
		return "", fmt.Errorf("experiments: %w", err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) == 0 {
		return "", fmt.Errorf("experiments: %s: unreadable: %v", filepath.Join(dir, "metrics.csv"), err)
	}
	col := slices.Index(rows[0], "test_accuracy")
	if col < 0 {
		return "", nil
	}
	var acc []float64
	for _, r := range rows[1:] {
		if col < len(r) {
			if v, err := strconv.ParseFloat(r[col], 64); err == nil && v == v {
				acc = append(acc, v)
			}
		}
	}
	if len(acc) < 2 || slices.Max(acc[1:]) > acc[0] {
		return "", nil
	}
	return fmt.Sprintf("test accuracy never rose above its first evaluation (%.4g) in %d evaluations: the learning rate may be too high or too low", acc[0], len(acc)), nil
}

// StuckRuns returns the names of the run folders directly under dir whose
// test accuracy never rose above their first evaluation (StuckWarning).
func StuckRuns(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var stuck []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if w, err := StuckWarning(filepath.Join(dir, e.Name())); err == nil && w != "" {
			stuck = append(stuck, e.Name())
		}
	}
	return stuck
}
