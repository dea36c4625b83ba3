package experiments

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"dpfl/results"
	"dpfl/results/figures"
)

const tuneBase = `name: tune
rounds: 6
data: {dataset: mnist, clients: 1000}
model: {kind: logreg}
client: {batch_size: 5, lr: 0.2}
participation: {kind: kb, cohort: 200, k: 2, b: 3}
aggregator: {kind: dpfedavg, clip: 1}
privacy: {delta: 1.0e-5, epsilon: 4}
server: {momentum: 0.9}
eval: {every: 2, validation: 0.5}
`

// TestTuneErrors: a tune: section that cannot work is refused, naming why.
func TestTuneErrors(t *testing.T) {
	cases := []struct{ grid, want string }{
		{"grid:\n  server.lr: [0.1, 1]\n  seed: [1, 2]\ntune: {keys: [server.lrr], seeds: [1]}\n", "server.lrr is not varied"},
		{"grid:\n  server.lr: [0.1, 1]\n  seed: [1, 2]\ntune: {keys: [server.lr], seeds: [7]}\n", "seed 7 is not among the grid's seeds"},
		{"grid:\n  server.lr: [0.1, 1]\ntune: {keys: [server.lr], seeds: [1]}\n", "needs seed varied"},
		{"grid:\n  server.lr: [0.1, 1]\n  seed: [1, 2]\ntune: {keys: [seed], seeds: [1]}\n", "seed is not a hyperparameter"},
		{"grid:\n  server.lr: [0.1, 1]\n  seed: [1, 2]\ntune: {seeds: [1]}\n", "tune.keys"},
		{"grid:\n  server.lr: [0.1, 1]\n  seed: [1, 2]\ntune: {keys: [server.lr], seeds: [1], on: x}\n", `unknown key "on"`},
	}
	for _, c := range cases {
		_, err := ParseGrid([]byte(tuneBase+c.grid), "g.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("grid %q:\n got %v\nwant an error containing %q", c.grid, err, c.want)
		}
	}
	noVal := strings.Replace(tuneBase, ", validation: 0.5", "", 1)
	_, err := ParseGrid([]byte(noVal+"grid:\n  server.lr: [0.1, 1]\n  seed: [1, 2]\ntune: {keys: [server.lr], seeds: [1]}\n"), "g.yaml")
	if err == nil || !strings.Contains(err.Error(), "no eval.validation") {
		t.Errorf("tuning without a validation split: got %v", err)
	}
}

// TestTuneTwoStages runs a tuned grid: the tuning seed tries every learning
// rate, the other seeds run only at the rate with the best validation
// accuracy (checked against the summaries directly), the index marks the rest
// not-chosen, and dpfl plot's selection agrees and averages all seeds.
func TestTuneTwoStages(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 8 small runs (about 10 s); run without -short")
	}
	t.Parallel()
	yml := tuneBase + `grid:
  privacy.epsilon: [1, 8]
  server.lr: [0.001, 0.5]
  seed: [1, 2, 3]
tune: {keys: [server.lr], seeds: [1]}
`
	g, err := ParseGrid([]byte(yml), filepath.Join(t.TempDir(), "tune.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Points) != 12 {
		t.Fatalf("%d points, want 2 × 2 × 3", len(g.Points))
	}
	out := t.TempDir()
	if n := len(g.Planned(out, g.Points)); n != 4+2*2 {
		t.Errorf("planned %d points before tuning, want 4 tuning + 2 groups × 2 seeds", n)
	}
	// Before any run, the index has the tuning points pending and the other
	// seeds' points waiting for their group's choice.
	statuses := func() map[string]int {
		tab, err := results.ReadTable(filepath.Join(out, "index.csv"))
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]int{}
		for i := range tab.Rows {
			counts[tab.Get(i, "status")]++
		}
		return counts
	}
	if err := WriteIndex(filepath.Join(out, "index.csv"), g, out); err != nil {
		t.Fatal(err)
	}
	if c := statuses(); c["pending"] != 4 || c[StageWaiting] != 8 || len(c) != 2 {
		t.Errorf("index statuses before tuning %v, want 4 pending and 8 waiting", c)
	}
	res, err := RunGrid(context.Background(), g, GridOptions{OutDir: out, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ran != 8 || res.NotChosen != 4 || res.Waiting != 0 {
		t.Fatalf("ran %d, not chosen %d, waiting %d; want 8, 4, 0", res.Ran, res.NotChosen, res.Waiting)
	}
	// The choice, recomputed from the tuning runs' summaries.
	want := map[float64]float64{} // epsilon -> chosen server.lr
	for _, eps := range []float64{1, 8} {
		best := -1.0
		for _, p := range g.Points {
			c := p.Config
			if c.Seed != 1 || *c.Privacy.Epsilon != eps {
				continue
			}
			s, ok := Finished(out, p)
			if !ok || s.FinalValAccuracy == nil {
				t.Fatalf("tuning point %s did not finish with a validation accuracy", p.Label(g.Varied))
			}
			if *s.FinalValAccuracy > best {
				best, want[eps] = *s.FinalValAccuracy, c.Server.LR
			}
		}
	}
	for _, p := range g.Points {
		c := p.Config
		_, finished := Finished(out, p)
		_, statErr := os.Stat(filepath.Join(out, p.Dir()))
		shouldRun := c.Seed == 1 || c.Server.LR == want[*c.Privacy.Epsilon]
		if finished != shouldRun || (!shouldRun && statErr == nil) {
			t.Errorf("point %s: finished %v, folder exists %v; want run %v", p.Label(g.Varied), finished, statErr == nil, shouldRun)
		}
	}
	counts := statuses()
	if counts["complete"]+counts["diverged"] != 8 || counts[StageNotChosen] != 4 {
		t.Errorf("index statuses %v, want 8 finished and 4 not-chosen", counts)
	}
	sum, err := figures.Summarize(out, figures.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped != 0 {
		t.Errorf("dpfl plot counts %d runs as unfinished; the not-chosen points are not", sum.Skipped)
	}
	if len(sum.Points) != 2 {
		t.Fatalf("%d plotted points, want 2", len(sum.Points))
	}
	for _, p := range sum.Points {
		// The tuning seed chose the setting, so the point reports the two
		// held-out seeds only.
		if p.Seeds != 2 || len(p.Tuning) != 1 || p.Tuning[0] != "1" || !strings.Contains(p.Hyper, "server.lr=") || parseLR(p.Hyper) != want[p.X] {
			t.Errorf("plotted point ε=%v: %d seeds (tuning %v), setting %q; want 2 held-out seeds at server.lr=%v", p.X, p.Seeds, p.Tuning, p.Hyper, want[p.X])
		}
	}
	// A rerun finds everything done and runs nothing.
	res, err = RunGrid(context.Background(), g, GridOptions{OutDir: out, Parallel: 2})
	if err != nil || res.Ran != 0 || res.Skipped != 8 {
		t.Errorf("rerun: ran %d, skipped %d, err %v; want 0, 8", res.Ran, res.Skipped, err)
	}
}

func parseLR(hyper string) float64 {
	v, err := strconv.ParseFloat(strings.TrimPrefix(hyper, "server.lr="), 64)
	if err != nil {
		return -1
	}
	return v
}

// startOrder records the order in which a grid's points start.
type startOrder struct{ started []Point }

func (s *startOrder) Start(p Point)                       { s.started = append(s.started, p) }
func (s *startOrder) Round(Point, int, float64)           {}
func (s *startOrder) Done(Point, *results.Summary, error) {}

// TestTuneGroupByGroup: a tuned grid runs group by group, each group's
// held-out seeds at its choice as soon as its tuning runs end and before
// the next group's tuning, so that a grid stopped part way has whole
// series; the points that run are the same as in two stages.
func TestTuneGroupByGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 6 small runs (about 8 s); run without -short")
	}
	t.Parallel()
	yml := tuneBase + `grid:
  privacy.epsilon: [1, 8]
  server.lr: [0.001, 0.5]
  seed: [1, 2]
tune: {keys: [server.lr], seeds: [1]}
`
	g, err := ParseGrid([]byte(yml), filepath.Join(t.TempDir(), "tune.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	ev := &startOrder{}
	res, err := RunGrid(context.Background(), g, GridOptions{OutDir: out, Parallel: 1, Events: ev})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ran != 6 || res.NotChosen != 2 || res.Waiting != 0 {
		t.Fatalf("ran %d, not chosen %d, waiting %d; want 6, 2, 0", res.Ran, res.NotChosen, res.Waiting)
	}
	var got []string
	for _, p := range ev.started {
		got = append(got, fmt.Sprintf("ε=%g seed %d", *p.Config.Privacy.Epsilon, p.Config.Seed))
	}
	want := []string{"ε=1 seed 1", "ε=1 seed 1", "ε=1 seed 2", "ε=8 seed 1", "ε=8 seed 1", "ε=8 seed 2"}
	if !slices.Equal(got, want) {
		t.Errorf("points started in the order\n%q\nwant each group's tuning, then its held-out seed:\n%q", got, want)
	}
}
