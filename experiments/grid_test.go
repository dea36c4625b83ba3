package experiments

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dpfl/results"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGridExpansionGolden pins the expansion order and the run IDs of
// testdata/grid.yaml (regenerate with go test ./experiments -run Golden -update
// after a deliberate change of the configuration's normalized form).
func TestGridExpansionGolden(t *testing.T) {
	g, err := LoadGrid("testdata/grid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "varied: %s\n", strings.Join(g.Varied, " "))
	for _, p := range g.Points {
		fmt.Fprintf(&b, "%2d %s %s\n", p.Index, p.ID, p.Label(g.Varied))
	}
	got := b.String()
	if *update {
		if err := os.WriteFile("testdata/grid.golden", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/grid.golden")
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("expansion changed:\n%s\nwant (testdata/grid.golden):\n%s", got, want)
	}
	if len(g.Points) != 12 {
		t.Errorf("%d points, want 3 × 2 × 2 = 12", len(g.Points))
	}
	// The first axis varies slowest; zip values vary together.
	p := g.Points[1]
	if p.Config.Aggregator.Kind != "dpfedavg" || *p.Config.Privacy.Epsilon != 1 || p.Config.Server.LR != 1 || p.Config.Server.Momentum != 0 {
		t.Errorf("point 1 = %s", p.Label(g.Varied))
	}
	// Expanding twice gives the same IDs (no hidden randomness).
	g2, _ := LoadGrid("testdata/grid.yaml")
	for i := range g.Points {
		if g.Points[i].ID != g2.Points[i].ID {
			t.Fatalf("point %d: ID %s then %s", i, g.Points[i].ID, g2.Points[i].ID)
		}
	}
}

// TestGridErrors checks that bad grids are reported with file, line and key.
func TestGridErrors(t *testing.T) {
	base := "name: g\nrounds: 5\ndata: {dataset: mnist, clients: 100}\nmodel: {kind: logreg}\nparticipation: {cohort: 10}\naggregator: {clip: 1}\n"
	cases := []struct{ grid, want string }{
		{"", "g.yaml:1: grid: nothing varies"},
		{"grid:\n  aggregator.kindd: [tree]\n", `g.yaml:8: grid.aggregator.kindd: unknown key "kindd" under aggregator`},
		{"grid:\n  privacy.epsilon: []\n", "g.yaml:8: grid.privacy.epsilon: empty list"},
		{"grid:\n  privacy.epsilon: 4\n", "g.yaml:8: grid.privacy.epsilon: want a list of values"},
		{"grid:\n  rounds.x: [1]\n", `rounds is a value, not a section`},
		{"grid:\n  server.lr: [1]\nzip:\n  - server.lr: [1]\n", "varied twice"},
		{"zip:\n  - server.lr: [1, 2]\n    server.momentum: [0]\n", "g.yaml:9: zip[0].server.momentum: has 1 values but server.lr has 2"},
		{"grid:\n  aggregator.kind: [tree, bogus]\n", `grid point 2 (aggregator.kind=bogus)`},
		{"grid:\n  rounds: [5, x]\n", `g.yaml:8: rounds: cannot use "x" as an integer`},
		{"grid:\n  rounds: [5]\nplot:\n  bye: name\n", `g.yaml:10: bye: unknown key "bye" (known keys here: by, x, y)`},
	}
	for _, c := range cases {
		_, err := ParseGrid([]byte(base+c.grid), "g.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("grid %q:\n got %v\nwant an error containing %q", c.grid, err, c.want)
		}
	}
}

// TestGridShards checks that shards are disjoint, cover the grid, and keep
// expansion order.
func TestGridShards(t *testing.T) {
	g, err := LoadGrid("testdata/grid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for i := 0; i < 5; i++ {
		ps, err := g.Shard(i, 5)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			all = append(all, p.ID)
		}
	}
	var want []string
	for _, p := range g.Points {
		want = append(want, p.ID)
	}
	slices.Sort(all)
	slices.Sort(want)
	if !slices.Equal(all, want) {
		t.Errorf("shards cover %v, grid is %v", all, want)
	}
	for _, s := range []string{"2/2", "-1/3", "1", "a/b", "0/0"} {
		if _, _, err := ParseShard(s); err == nil {
			t.Errorf("ParseShard(%q) accepted", s)
		}
	}
	if i, n, err := ParseShard("3/8"); err != nil || i != 3 || n != 8 {
		t.Errorf("ParseShard(3/8) = %d, %d, %v", i, n, err)
	}
}

// smallGrid is a 4-point grid of short real-MNIST runs.
func smallGrid(t *testing.T, cache string) *Grid {
	t.Helper()
	yml := `name: tiny
seed: 3
rounds: 6
data: {dataset: mnist, clients: 1000}
model: {kind: logreg}
client: {batch_size: 5, lr: 0.2}
participation: {kind: kb, cohort: 200, k: 2, b: 3}
aggregator: {clip: 1, cache: ` + cache + `}
privacy: {delta: 1.0e-5}
server: {lr: 0.5, momentum: 0.9}
eval: {every: 2}
grid:
  aggregator.kind: [dpfedavg, bandmf]
  privacy.epsilon: [2, 8]
`
	g, err := ParseGrid([]byte(yml), filepath.Join(t.TempDir(), "tiny.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// indexWithoutWall reads index.csv without its wall-time column.
func indexWithoutWall(t *testing.T, path string) string {
	t.Helper()
	tab, err := results.ReadTable(path)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := -1; i < len(tab.Rows); i++ {
		for j, h := range tab.Header {
			if h == "wall_seconds" {
				continue
			}
			if i < 0 {
				b.WriteString(h)
			} else {
				b.WriteString(tab.Rows[i][j])
			}
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	return b.String()
}

type countEvents struct{ started, done, rounds int }

func (c *countEvents) Start(Point)                         { c.started++ }
func (c *countEvents) Round(Point, int, float64)           { c.rounds++ }
func (c *countEvents) Done(Point, *results.Summary, error) { c.done++ }

// TestGridKillResumeAndShards runs a grid straight; then the same grid is
// cancelled in the middle of its third point and rerun (no finished point
// is redone, the interrupted one resumes); then two shards run into one
// folder. All three index files must agree (except wall time).
func TestGridKillResumeAndShards(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	g := smallGrid(t, cache)
	straight := t.TempDir()
	if _, err := RunGrid(context.Background(), g, GridOptions{OutDir: straight, Parallel: 2}); err != nil {
		t.Fatal(err)
	}
	want := indexWithoutWall(t, filepath.Join(straight, "index.csv"))
	if strings.Count(want, ",complete,") != 4 {
		t.Fatalf("straight grid not complete:\n%s", want)
	}
	// Each finished point's epsilon names its accountant.
	if tab, err := results.ReadTable(filepath.Join(straight, "index.csv")); err != nil || tab.Get(0, "accountant") != "exact-gdp" || tab.Get(3, "accountant") != "exact-gdp" {
		t.Fatalf("index accountant column: %v, %v", tab, err)
	}

	killed := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	ev := &cancelAt{point: 2, round: 3, cancel: cancel, dir: killed}
	res, err := RunGrid(ctx, g, GridOptions{OutDir: killed, Parallel: 1, Events: ev})
	if err == nil || res.Ran != 2 {
		t.Fatalf("killed grid: ran %d points, err %v; want 2 and a cancellation", res.Ran, err)
	}
	if !ev.sawFirstComplete {
		t.Error("index.csv did not list point 1 as complete when point 2 started (the index is written after every point)")
	}
	idx, _ := os.ReadFile(filepath.Join(killed, "index.csv"))
	if !bytes.Contains(idx, []byte(",interrupted,")) || !bytes.Contains(idx, []byte(",pending,")) {
		t.Errorf("index of the killed grid should show interrupted and pending points:\n%s", idx)
	}
	var log bytes.Buffer
	counts := &countEvents{}
	res, err = RunGrid(context.Background(), g, GridOptions{OutDir: killed, Parallel: 1, Events: counts, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped != 2 || res.Ran != 2 || counts.started != 2 {
		t.Errorf("rerun: skipped %d, ran %d, started %d; want 2, 2, 2", res.Skipped, res.Ran, counts.started)
	}
	if !strings.Contains(log.String(), "resuming after round 3") {
		t.Errorf("the interrupted point did not resume from its checkpoint; log: %q", log.String())
	}
	if counts.rounds != 3+6 {
		t.Errorf("rerun trained %d rounds, want 3 (resumed point) + 6 (pending point)", counts.rounds)
	}
	if got := indexWithoutWall(t, filepath.Join(killed, "index.csv")); got != want {
		t.Errorf("killed and resumed grid's index differs:\n%s\nwant\n%s", got, want)
	}

	sharded := t.TempDir()
	for i := 0; i < 2; i++ {
		if _, err := RunGrid(context.Background(), g, GridOptions{OutDir: sharded, Shard: i, Shards: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if got := indexWithoutWall(t, filepath.Join(sharded, "index.csv")); got != want {
		t.Errorf("two shards' index differs from the unsharded grid's:\n%s\nwant\n%s", got, want)
	}
}

// cancelAt cancels the grid after the given round of the given point. When
// the point after the first starts, it records whether index.csv (in dir,
// when set) already lists the first point as complete.
type cancelAt struct {
	point, round     int
	cancel           func()
	dir              string
	sawFirstComplete bool
}

func (c *cancelAt) Start(p Point) {
	if p.Index == 1 && c.dir != "" {
		idx, _ := os.ReadFile(filepath.Join(c.dir, "index.csv"))
		lines := strings.Split(string(idx), "\n")
		c.sawFirstComplete = len(lines) > 1 && strings.Contains(lines[1], ",complete,")
	}
}
func (c *cancelAt) Round(p Point, r int, _ float64) {
	if p.Index == c.point && r == c.round {
		c.cancel()
	}
}
func (c *cancelAt) Done(Point, *results.Summary, error) {}
