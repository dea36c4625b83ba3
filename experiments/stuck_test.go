package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// StuckWarning warns when no later evaluation beats the first; StuckRuns
// names such run folders of a grid.
func TestStuckWarning(t *testing.T) {
	dir := t.TempDir()
	write := func(name, acc string) {
		d := filepath.Join(dir, name)
		os.MkdirAll(d, 0o755)
		body := "round,test_accuracy\n"
		for i, a := range strings.Split(acc, " ") {
			body += string(rune('1'+i)) + "," + a + "\n"
		}
		if err := os.WriteFile(filepath.Join(d, "metrics.csv"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("learns", "0.1 0.09 0.5")
	write("chance", "0.098 0.098 0.097")
	write("once", "0.1")
	w, err := StuckWarning(filepath.Join(dir, "chance"))
	if err != nil || !strings.Contains(w, "never rose above its first evaluation (0.098)") {
		t.Errorf("chance: %q, %v", w, err)
	}
	for _, n := range []string{"learns", "once"} {
		if w, err := StuckWarning(filepath.Join(dir, n)); err != nil || w != "" {
			t.Errorf("%s: %q, %v", n, w, err)
		}
	}
	if got := StuckRuns(dir); len(got) != 1 || got[0] != "chance" {
		t.Errorf("StuckRuns = %v", got)
	}
}
