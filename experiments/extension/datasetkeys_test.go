package extension

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"dpfl/datasets"
	"dpfl/experiments"
	"dpfl/sim/rng"
)

// A new dataset with a key of its own, added from outside package
// datasets: its key struct, returned by its Kind's Own, is decoded from
// the data section and read with Config.OwnKeys.

// stripesKeys are stripes' own keys.
type stripesKeys struct {
	// Spread: the standard deviation of the pixel noise (0: 0.3).
	Spread float64 `yaml:"spread"`
}

// stripes draws n noisy 4×4 images whose class c lights column c.
func stripes(n int, spread float64, root rng.Root, label string) *datasets.Dataset {
	r := root.Stream(label)
	d := &datasets.Dataset{X: make([]float32, n*blobsDim), Y: make([]int32, n), Dim: blobsDim, Classes: blobsClasses}
	for i := range n {
		c := r.IntN(blobsClasses)
		d.Y[i] = int32(c)
		for j := range blobsDim {
			v := spread * r.NormFloat64()
			if j%4 == c {
				v++
			}
			d.X[i*blobsDim+j] = float32(v)
		}
	}
	return d
}

// stripesSpreads records the spread of every stripes population loaded.
var stripesSpreads []float64

func init() {
	datasets.Register(&datasets.Kind{
		Name: "stripes", Doc: "4×4 images of four noisy columns, drawn from the run's seed (a test's dataset with a key)", Order: 101,
		Partitions: []datasets.Partition{{Name: datasets.IID}},
		Own:        func() any { return new(stripesKeys) },
		Validate: func(c *datasets.Config, add datasets.Problems, _ func(string) bool) {
			var k stripesKeys
			if c.OwnKeys(&k) == nil && !(k.Spread >= 0 && k.Spread <= 5) {
				add("spread", "%v must be in [0, 5]", k.Spread)
			}
		},
		Load: func(_ context.Context, c *datasets.Config, _ *datasets.Loader, root rng.Root) (*datasets.Federated, error) {
			k := stripesKeys{Spread: 0.3}
			if err := c.OwnKeys(&k); err != nil {
				return nil, err
			}
			if k.Spread == 0 {
				k.Spread = 0.3
			}
			stripesSpreads = append(stripesSpreads, k.Spread)
			train, test := stripes(blobsTrain, k.Spread, root, "stripes/train"), stripes(blobsTest, k.Spread, root, "stripes/test")
			return datasets.NewFederated(c.Dataset, train, test, datasets.PartitionSpec{Kind: datasets.IID, Clients: c.Clients}, root.Stream("partition"))
		},
		Shape: func(*datasets.Config, bool) (dim, classes, bytes float64) { return blobsDim, blobsClasses, 0 },
	})
}

// TestRegisteredDatasetKeys: a dataset registered from a test file with a
// key of its own takes the key in the data section (its value type
// checked on decoding, its range by the dataset's validation, both located
// by file and line), trains with it, and gives the key a place in the run
// ID only when set; the key is refused with another dataset, and a key no
// dataset has is still unknown (negative controls).
func TestRegisteredDatasetKeys(t *testing.T) {
	run := strings.Replace(blobsRun, "dataset: blobs,", "dataset: stripes, spread: 0.1,", 1)
	cfg, _, err := experiments.Load([]byte(run), "stripes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Data.Own["spread"]; got != 0.1 {
		t.Fatalf("spread %v (%T), want 0.1", got, got)
	}
	stripesSpreads = nil
	out, err := experiments.Run(context.Background(), cfg, experiments.Options{OutDir: t.TempDir(), Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if out.Summary.Status != "complete" || out.Summary.Rounds != 2 || len(stripesSpreads) == 0 || stripesSpreads[0] != 0.1 {
		t.Errorf("status %q, rounds %d, spreads loaded %v", out.Summary.Status, out.Summary.Rounds, stripesSpreads)
	}
	ids := map[string]string{}
	for _, spread := range []string{"", " spread: 0,", " spread: 0.1,", " spread: 0.2,"} {
		y := strings.Replace(blobsRun, "dataset: blobs,", "dataset: stripes,"+spread, 1)
		c, _, err := experiments.Load([]byte(y), "stripes.yaml")
		if err != nil {
			t.Fatal(err)
		}
		ids[spread] = experiments.RunID(c, nil)
	}
	if ids[""] != ids[" spread: 0,"] || ids[""] == ids[" spread: 0.1,"] || ids[" spread: 0.1,"] == ids[" spread: 0.2,"] {
		t.Errorf("run IDs %v: want unset = 0, and each set value its own", ids)
	}
	for _, c := range []struct{ data, want string }{
		{"dataset: stripes, spread: 9,", "stripes.yaml:5: data.spread: 9 must be in [0, 5]"},
		{"dataset: stripes, spread: wide,", "stripes.yaml:5: data.spread:"},
		{"dataset: blobs, spread: 0.1,", "data.spread: only dataset stripes uses it"},
		{"dataset: stripes, sprad: 0.1,", `data.sprad: unknown key "sprad"`},
	} {
		y := strings.Replace(blobsRun, "dataset: blobs,", c.data, 1)
		if _, _, err := experiments.Load([]byte(y), "stripes.yaml"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.data, err, c.want)
		}
	}
	// A grid varies the key as any other.
	grid := strings.Replace(blobsRun, "dataset: blobs,", "dataset: stripes,", 1) + "grid:\n  data.spread: [0.1, 0.2]\n"
	g, err := experiments.ParseGrid([]byte(grid), "stripes-grid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Points) != 2 || g.Points[0].Config.Data.Own["spread"] != 0.1 || g.Points[1].Config.Data.Own["spread"] != 0.2 {
		t.Errorf("grid points %+v", g.Points)
	}
	if keys := datasets.LookupKind("stripes").Keys(); fmt.Sprint(keys) != "[spread]" {
		t.Errorf("Keys = %v", keys)
	}
}
