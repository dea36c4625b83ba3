package figures

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// paperDir is the committed reproductions folder.
const paperDir = "../paper"

// checkChoices checks how a committed reproduction chose its
// hyperparameters: on the validation column, none at an edge of the values
// tried except the series named in edgeOK (whose README says so), each
// point with a 95% interval around its mean.
func checkChoices(t *testing.T, name, by string, edgeOK ...string) {
	t.Helper()
	s, err := Summarize(filepath.Join(paperDir, name), Options{By: by})
	if err != nil {
		t.Fatal(err)
	}
	if s.SelectCol != "final_val_accuracy" {
		t.Errorf("%s: hyperparameters chosen on %s, want the validation accuracy", name, s.SelectCol)
	}
	all := append(append([]Point{}, s.Points...), s.Baselines...)
	for _, p := range all {
		if p.Seeds < 2 || math.IsNaN(p.CILow) || !(p.CILow <= p.Mean && p.Mean <= p.CIHigh) {
			t.Errorf("%s: %s at %g: %d seeds, interval [%g, %g] around %g", name, p.Series, p.X, p.Seeds, p.CILow, p.CIHigh, p.Mean)
		}
		if len(p.Edges) > 0 && !slices.Contains(edgeOK, p.Series) {
			t.Errorf("%s: %s at %g chose %v: widen the grid", name, p.Series, p.X, p.Edges)
		}
	}
}

// trainingRepros are the committed training reproductions; fullGrids
// those that chose hyperparameters on every seed (no tune: section), whose
// points the protocol marks and never separates.
var (
	trainingRepros = []string{"centralized-mnist", "centralized-mnist-60k", "centralized-mnist-paper-sigma",
		"centralized-mnist-paper-size", "centralized-mnist-bandmf", "centralized-mnist-bandmf-nomomentum", "emnist-writers", "emnist-writers-protocol",
		"stackoverflow-debian", "stackoverflow-debian-sgdm"}
	// edgeOK are the series allowed a choice at an edge of the values
	// tried, by reproduction (their READMEs say so).
	edgeOK    = map[string][]string{"emnist-writers-protocol": {"dpfedavg"}, "centralized-mnist-bandmf": {"nonprivate"}}
	fullGrids = []string{"centralized-mnist"}
	// onePoint are the reproductions with a single point, which compare
	// nothing (their README says so).
	onePoint = []string{"centralized-mnist-paper-sigma"}
)

// TestPaperHeldOutSeeds checks what every committed training reproduction
// reports: hyperparameters chosen on the validation column, none at an
// edge of the values tried, a non-private reference where the figure has
// one, and every point's mean over held-out seeds only (the tuning seeds
// are not in it), except in the full grids, whose points say so.
func TestPaperHeldOutSeeds(t *testing.T) {
	for _, name := range trainingRepros {
		s, err := Summarize(filepath.Join(paperDir, name), Options{By: "name"})
		if err != nil {
			t.Fatal(err)
		}
		checkChoices(t, name, "name", edgeOK[name]...)
		full := slices.Contains(fullGrids, name)
		for _, p := range append(append([]Point{}, s.Points...), s.Baselines...) {
			if p.TunedOnReported != full {
				t.Errorf("%s: %s at %g: tuned on the reported seeds = %v", name, p.Series, p.X, p.TunedOnReported)
			}
			for _, v := range p.PerSeed {
				if !full && slices.Contains(p.Tuning, v.Seed) {
					t.Errorf("%s: %s at %g reports tuning seed %s", name, p.Series, p.X, v.Seed)
				}
			}
			if p.Seeds < 2 || len(p.PerSeed) != p.Seeds {
				t.Errorf("%s: %s at %g: %d reported seeds", name, p.Series, p.X, p.Seeds)
			}
		}
	}
}

// claimsMarker starts a README's table of comparisons, one per row:
//
//	| A @ x | B @ x | verdict | reason |
//
// where A or B may name another reproduction's series as folder/series.
// TestPaperClaims recomputes every row from the committed index.csv.
const claimsMarker = "<!-- comparisons: recomputed by results/figures/paper_test.go -->"

// TestPaperClaims checks every comparison a reproduction's README states
// against the protocol (Compare) on the committed index.csv: the verdict
// and its reason must be what the data give. A README must state at least
// one comparison.
func TestPaperClaims(t *testing.T) {
	for _, name := range trainingRepros {
		s, err := Summarize(filepath.Join(paperDir, name), Options{By: "name"})
		if err != nil {
			t.Fatal(err)
		}
		rows := readClaims(t, filepath.Join(paperDir, name, "README.md"))
		if len(rows) == 0 && !slices.Contains(onePoint, name) {
			t.Errorf("%s/README.md: no comparisons table after %s", name, claimsMarker)
		}
		for _, r := range rows {
			a, okA := findPointIn(t, s, r[0])
			b, okB := findPointIn(t, s, r[1])
			if !okA || !okB {
				t.Errorf("%s/README.md: %q vs %q: no such point", name, r[0], r[1])
				continue
			}
			c := Compare(a, b)
			if c.Verdict != r[2] || c.Reason != r[3] {
				t.Errorf("%s/README.md: stated | %s | %s | %s | %s |\n  the data give | %s | %s | %s | %s |",
					name, r[0], r[1], r[2], r[3], r[0], r[1], c.Verdict, c.Reason)
			}
		}
	}
}

// readClaims returns the cells of the comparisons table in a README.
func readClaims(t *testing.T, path string) [][]string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), claimsMarker)
	if !ok {
		return nil
	}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimLeft(after, "\n"), "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "| "), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) != 4 || cells[0] == "A" || strings.HasPrefix(cells[0], "--") {
			continue // the header and its rule
		}
		rows = append(rows, cells)
	}
	return rows
}

// findPointIn finds "series @ x" in s, or "folder/series @ x" in another
// committed reproduction (a comparison across two grids, paired by seed,
// for an ablation that changes one setting of another grid).
func findPointIn(t *testing.T, s *Summary, key string) (Point, bool) {
	folder, rest, ok := strings.Cut(key, "/")
	if !ok {
		return findPoint(s, key)
	}
	other, err := Summarize(filepath.Join(paperDir, folder), Options{By: "name"})
	if err != nil {
		t.Errorf("%q: %v", key, err)
		return Point{}, false
	}
	return findPoint(other, rest)
}

// findPoint finds "series @ x" (x "inf" for a non-private baseline; for a
// grid calibrated for a larger population, x is the target epsilon).
func findPoint(s *Summary, key string) (Point, bool) {
	ser, xs, ok := strings.Cut(key, " @ ")
	if !ok {
		return Point{}, false
	}
	x := math.Inf(1)
	if xs != "inf" {
		var err error
		if x, err = strconv.ParseFloat(xs, 64); err != nil {
			return Point{}, false
		}
	}
	for _, p := range append(append([]Point{}, s.Points...), s.Baselines...) {
		at := p.X
		if p.Target != 0 {
			at = p.Target // a population-scaled grid's rows name the target epsilon
		}
		if p.Series == ser && (at == x || math.Abs(at-x) < 1e-9*math.Abs(x)) {
			return p, true
		}
	}
	return Point{}, false
}
