package extension

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dpfl/datasets"
	"dpfl/experiments"
	"dpfl/results"
	"dpfl/sim/rng"
)

// A new dataset, added as CONTRIBUTING.md's recipe adds one: its reader
// and its Kind, registered by name. It has no keys of its own (datasetkeys_test.go
// adds one that has).

// blobsDim and blobsClasses are blobs' image size (4×4) and classes.
const (
	blobsDim, blobsClasses = 16, 4
	blobsTrain, blobsTest  = 400, 100
)

// blobs draws n noisy 4×4 images: class c lights row c.
func blobs(n int, root rng.Root, label string) *datasets.Dataset {
	r := root.Stream(label)
	d := &datasets.Dataset{X: make([]float32, n*blobsDim), Y: make([]int32, n), Dim: blobsDim, Classes: blobsClasses}
	for i := range n {
		c := r.IntN(blobsClasses)
		d.Y[i] = int32(c)
		for j := range blobsDim {
			v := 0.3 * r.NormFloat64()
			if j/4 == c {
				v++
			}
			d.X[i*blobsDim+j] = float32(v)
		}
	}
	return d
}

func init() {
	datasets.Register(&datasets.Kind{
		Name: "blobs", Doc: "4×4 images of four noisy bars, drawn from the run's seed (a test's dataset)", Order: 100,
		Partitions: []datasets.Partition{{Name: datasets.IID}},
		Load: func(_ context.Context, c *datasets.Config, _ *datasets.Loader, root rng.Root) (*datasets.Federated, error) {
			train, test := blobs(blobsTrain, root, "blobs/train"), blobs(blobsTest, root, "blobs/test")
			return datasets.NewFederated(c.Dataset, train, test, datasets.PartitionSpec{Kind: datasets.IID, Clients: c.Clients}, root.Stream("partition"))
		},
		Shape: func(*datasets.Config, bool) (dim, classes, bytes float64) { return blobsDim, blobsClasses, 0 },
	})
}

const blobsRun = `
name: blobs
seed: 5
rounds: 2
data: {dataset: blobs, clients: 20}
model: {kind: logreg}
client: {batch_size: 10, lr: 0.5}
participation: {kind: kb, cohort: 10, k: 1, b: 2}
aggregator: {kind: dpfedavg, clip: 1.0, noise_multiplier: 0.5}
privacy: {delta: 1.0e-3}
server: {lr: 1}
`

// TestRegisteredDataset: a dataset registered from a test file is listed
// after the built-in ones (whose order is unchanged), a configuration that
// uses it validates with its default partition, a key it does not own is
// refused, and a run with it trains two rounds on its clients and records
// a model of its shape.
func TestRegisteredDataset(t *testing.T) {
	want := []string{"mnist", "debian", "text", "tff-emnist", "tff-stackoverflow", "tff-shakespeare", "leaf", "blobs", "stripes"}
	if got := datasets.KindNames(nil); !slices.Equal(got, want) {
		t.Fatalf("KindNames = %v, want %v", got, want)
	}
	text := true
	if slices.Contains(datasets.KindNames(&text), "blobs") {
		t.Error("blobs is listed as text")
	}
	if _, _, err := experiments.Load([]byte(strings.Replace(blobsRun, "clients: 20", "clients: 20, alpha: 1", 1)), "blobs.yaml"); err == nil || !strings.Contains(err.Error(), "only dataset mnist uses it") {
		t.Errorf("alpha with blobs: %v", err)
	}
	cfg, _, err := experiments.Load([]byte(blobsRun), "blobs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Data.Partition != datasets.IID {
		t.Errorf("partition %q, want the default iid", cfg.Data.Partition)
	}
	out, err := experiments.Run(context.Background(), cfg, experiments.Options{OutDir: t.TempDir(), Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if s := out.Summary; s.Status != "complete" || s.Rounds != 2 || !(s.FinalAccuracy > 0.5) {
		t.Errorf("summary: status %q, rounds %d, accuracy %v", s.Status, s.Rounds, s.FinalAccuracy)
	}
	rows, err := results.ReadMetrics(filepath.Join(out.Dir, "metrics.csv"))
	if err != nil || len(rows) != 2 || rows[1].Round != 2 || rows[1].Cohort != 10 {
		t.Errorf("metrics: %+v, %v", rows, err)
	}
	b, err := os.ReadFile(filepath.Join(out.Dir, "config.yaml"))
	if err != nil || !strings.Contains(string(b), "dataset: blobs") {
		t.Errorf("config.yaml: %s, %v", b, err)
	}
	ts, meta, err := results.ReadSafetensors(filepath.Join(out.Dir, results.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Name != "W0" || !slices.Equal(ts[0].Shape, []int{blobsDim, blobsClasses}) || meta["input_dim"] != "16" || meta["classes"] != "4" {
		t.Errorf("model: %d tensors, %s %v, metadata %v", len(ts), ts[0].Name, ts[0].Shape, meta)
	}
}
