package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStackOverflowTFFRecipe: the run recipe for TFF's StackOverflow file in
// results/paper/stackoverflow-debian/README.md (its data: block in place of
// the grid file's) loads as a grid, with the file's dataset and subset, and
// every other setting of experiments/paper/stackoverflow-debian.yaml.
func TestStackOverflowTFFRecipe(t *testing.T) {
	readme, err := os.ReadFile("../results/paper/stackoverflow-debian/README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```yaml\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 || !strings.HasPrefix(block, "data:\n") {
		t.Fatalf("README: no ```yaml data: block (%q)", block)
	}
	grid, err := os.ReadFile("paper/stackoverflow-debian.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g := string(grid)
	i := strings.Index(g, "\ndata:\n")
	j := strings.Index(g, "\nmodel:\n")
	if i < 0 || j < i {
		t.Fatal("stackoverflow-debian.yaml: no data: section before model:")
	}
	recipe := g[:i+1] + block + g[j+1:]
	// The grid fingerprints data.path: point it at a stand-in file.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "stackoverflow.sqlite"), []byte("stand-in"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(recipe, "path: /data/tff/stackoverflow.sqlite") {
		t.Fatal("the recipe's data.path changed: update this test")
	}
	recipe = strings.Replace(recipe, "path: /data/tff/stackoverflow.sqlite", "path: stackoverflow.sqlite", 1)
	path := filepath.Join(dir, "recipe.yaml")
	if err := os.WriteFile(path, []byte(recipe), 0o644); err != nil {
		t.Fatal(err)
	}
	gr, err := LoadGrid(path)
	if err != nil {
		t.Fatalf("the recipe does not load: %v\n%s", err, recipe)
	}
	pts := gr.Points
	if len(pts) == 0 {
		t.Fatal("the recipe has no points")
	}
	d := pts[0].Config.Data
	if d.Dataset != "tff-stackoverflow" || d.Clients != 270 || d.Vocab != 1000 || !strings.HasSuffix(d.Path, "stackoverflow.sqlite") {
		t.Errorf("recipe data %+v", d)
	}
	if pts[0].Config.Participation.K != 12 || pts[0].Config.Participation.B != 27 || pts[0].Config.Rounds != 324 {
		t.Errorf("recipe participation %+v, rounds %d: want the grid file's", pts[0].Config.Participation, pts[0].Config.Rounds)
	}
}
