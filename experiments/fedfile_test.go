package experiments

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// leafFEMNIST writes a small LEAF FEMNIST folder: 12 writers of 10 training
// and 2 test images; writer w's images show the label as a bright column.
func leafFEMNIST(t *testing.T) string {
	dir := t.TempDir()
	for split, n := range map[string]int{"train": 10, "test": 2} {
		data := map[string]map[string]any{}
		var users []string
		var counts []int
		for w := 0; w < 12; w++ {
			u := fmt.Sprintf("f%04d_%02d", w, w)
			var xs [][]float32
			var ys []int
			for k := 0; k < n; k++ {
				y := (w + k) % 10
				px := make([]float32, 784)
				for r := 0; r < 28; r++ {
					px[r*28+y*2] = 1
				}
				xs, ys = append(xs, px), append(ys, y)
			}
			users, counts = append(users, u), append(counts, n)
			data[u] = map[string]any{"x": xs, "y": ys}
		}
		b, _ := json.Marshal(map[string]any{"users": users, "num_samples": counts, "user_data": data})
		os.MkdirAll(filepath.Join(dir, split), 0o755)
		if err := os.WriteFile(filepath.Join(dir, split, "all_data_0.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// tffShakespeare writes a small TFF Shakespeare SQLite file: 6 roles with 5
// training and 1 test snippet each (protos encoded here with protowire).
func tffShakespeare(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "shakespeare.sqlite")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	snippet := func(s string) []byte {
		var list, feat, entry, feats, ex []byte
		list = protowire.AppendBytes(protowire.AppendTag(list, 1, protowire.BytesType), []byte(s))
		feat = protowire.AppendBytes(protowire.AppendTag(feat, 1, protowire.BytesType), list)
		entry = protowire.AppendBytes(protowire.AppendTag(entry, 1, protowire.BytesType), []byte("snippets"))
		entry = protowire.AppendBytes(protowire.AppendTag(entry, 2, protowire.BytesType), feat)
		feats = protowire.AppendBytes(protowire.AppendTag(feats, 1, protowire.BytesType), entry)
		return protowire.AppendBytes(protowire.AppendTag(ex, 1, protowire.BytesType), feats)
	}
	stmts := []string{
		"CREATE TABLE examples (split_name TEXT NOT NULL, client_id TEXT NOT NULL, serialized_example_proto BLOB NOT NULL)",
		"CREATE TABLE client_metadata (client_id TEXT NOT NULL, split_name TEXT NOT NULL, num_examples INTEGER NOT NULL)",
	}
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	for r := 0; r < 6; r++ {
		role := fmt.Sprintf("PLAY_ROLE_%d", r)
		for split, n := range map[string]int{"train": 5, "test": 1} {
			for k := 0; k < n; k++ {
				line := fmt.Sprintf("%s speaks line %d of act %d: to be or not to be.", role, k, r)
				if _, err := db.Exec("INSERT INTO examples VALUES (?, ?, ?)", split, role, snippet(line)); err != nil {
					t.Fatal(err)
				}
			}
			db.Exec("INSERT INTO client_metadata VALUES (?, ?, ?)", role, split, n)
		}
	}
	return path
}

// fileRun is a short run on a federated file.
func fileRun(dataset, path, model, extra string) string {
	return `name: file
seed: 3
rounds: 4
data:
  dataset: ` + dataset + `
  path: ` + path + `
` + extra + `model:
  kind: ` + model + `
client:
  batch_size: 5
  lr: 0.1
participation:
  cohort: 4
aggregator:
  clip: 1
  noise_multiplier: 0
server:
  lr: 1
eval:
  every: 2
`
}

// TestFederatedFileRuns: runs on a LEAF folder and a TFF file: the
// population is the file's clients (data.clients keeps a subset), dpfl
// account sees it without loading examples, the inputs' fingerprint names
// data.path and changes with the file.
func TestFederatedFileRuns(t *testing.T) {
	leaf := leafFEMNIST(t)
	res, _ := runConfig(t, fileRun("leaf", leaf, "logreg", ""), 1)
	if res.Summary.FinalAccuracy < 0.5 {
		t.Fatalf("leaf femnist accuracy %.3f: the label is drawn in the image", res.Summary.FinalAccuracy)
	}
	cfg, _, err := Load([]byte(fileRun("leaf", leaf, "logreg", "  clients: 7\n")), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := NewPlan(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	acct, err := NewAccount(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Clients != 7 || plan.Data.Train.Len() != 70 || plan.Data.Test.Len() != 14 || acct.Clients != 7 || plan.Data.Train.Classes != 62 {
		t.Fatalf("subset: plan %d clients (%d/%d examples, %d classes), account %d", plan.Clients, plan.Data.Train.Len(), plan.Data.Test.Len(), plan.Data.Train.Classes, acct.Clients)
	}
	in, err := Fingerprint(cfg, Options{})
	if err != nil || !strings.HasPrefix(in["data.path"], "sha256:") {
		t.Fatalf("inputs %v, %v", in, err)
	}
	os.WriteFile(filepath.Join(leaf, "test", "all_data_1.json"), []byte(`{"users": [], "user_data": {}}`), 0o644)
	if in2, _ := Fingerprint(cfg, Options{}); in2["data.path"] == in["data.path"] {
		t.Fatal("a new LEAF file did not change the fingerprint")
	}
	cfg.Data.Clients = 13
	if _, err := NewAccount(context.Background(), cfg, Options{}); err == nil || !strings.Contains(err.Error(), "data.clients: ") ||
		!strings.Contains(err.Error(), "13 clients asked for, but the data has 12 eligible clients") {
		t.Fatalf("too many clients: %v", err)
	}
	cfg, _, _ = Load([]byte(fileRun("leaf", leaf, "lstm", "")), "f.yaml")
	if _, err := NewPlan(context.Background(), cfg, Options{}); err == nil || !strings.Contains(err.Error(), "model.kind: lstm predicts the next token of text, but data.path holds leaf-femnist images") {
		t.Fatalf("lstm on LEAF FEMNIST: %v", err)
	}

	tff := tffShakespeare(t)
	y := fileRun("tff-shakespeare", tff, "lstm", "  min_tokens: 10\n")
	y = strings.Replace(y, "kind: lstm", "kind: lstm\n  embed: 8\n  hidden: [16]", 1)
	res, _ = runConfig(t, y, 1)
	if res.Summary.Rounds != 4 {
		t.Fatalf("tff-shakespeare run: %+v", res.Summary)
	}
	cfg, _, err = Load([]byte(y), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.Data
	if d.TrainSplit != "train" || d.TestSplit != "test" || d.SeqLen != 80 || d.Partition != "user" || d.TestFraction != 0 {
		t.Fatalf("tff-shakespeare defaults %+v", d)
	}
	if plan, err = NewPlan(context.Background(), cfg, Options{}); err != nil || plan.Clients != 6 || plan.Data.Train.Dim != 80 {
		t.Fatalf("plan %v", err)
	}
}

// TestFederatedFileConfigErrors: keys that do not apply, and a missing
// path, name the key.
func TestFederatedFileConfigErrors(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{strings.Replace(fileRun("tff-emnist", "x.sqlite", "cnn", ""), "  path: x.sqlite\n", "", 1),
			"data.path: required for dataset tff-emnist: the SQLite file that tff.simulation.datasets.emnist.load_data caches"},
		{fileRun("tff-stackoverflow", "x.sqlite", "lstm", "  train_split: test\n"), `data.test_split: "test" is also train_split`},
		{fileRun("tff-emnist", "x.sqlite", "cnn", "  test_fraction: 0.1\n"), "data.test_fraction: dataset tff-emnist holds its own held-out split"},
		{fileRun("leaf", "x", "lstm", "  vocab: 100\n"), "data.vocab: only dataset debian, text, tff-stackoverflow or tff-shakespeare uses it"},
		{fileRun("leaf", "x", "cnn", "  train_split: a\n"), "data.train_split: only dataset tff-emnist, tff-stackoverflow or tff-shakespeare uses it"},
		{strings.Replace(fileRun("tff-stackoverflow", "x.sqlite", "lstm", "  digits_only: true\n"), "", "", 1), "data.digits_only: only dataset tff-emnist or leaf uses it"},
		{fileRun("tff-emnist", "x.sqlite", "lstm", ""), "model.kind: lstm predicts the next word of text: it needs dataset debian, text, tff-stackoverflow, tff-shakespeare or leaf, not tff-emnist"},
		{fileRun("tff-stackoverflow", "x.sqlite", "cnn", ""), "model.kind: cnn classifies images, but dataset tff-stackoverflow is next-word text"},
		{fileRun("tff-emnist", "x.sqlite", "cnn", "  partition: iid\n"), "data.partition: tff-emnist has one client per client of the file"},
	} {
		_, _, err := Load([]byte(c.yaml), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
	cfg, _, err := Load([]byte(fileRun("tff-emnist", "absent.sqlite", "cnn", "")), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewPlan(context.Background(), cfg, Options{BaseDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "data.path: ") || !strings.Contains(err.Error(), "absent.sqlite") {
		t.Fatalf("missing file: %v", err)
	}
}
