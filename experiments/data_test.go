package experiments

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"dpfl/datasets"
)

// textYAML is a next-word run on the JSONL corpus at path: a tiny LSTM, no
// noise.
func textYAML(path string) string {
	return `name: text
seed: 5
rounds: 20
data:
  dataset: text
  path: ` + path + `
  vocab: 40
  seq_len: 8
  min_tokens: 20
model:
  kind: lstm
  embed: 8
  hidden: [24]
client:
  epochs: 4
  batch_size: 8
  lr: 1
participation:
  cohort: 4
aggregator:
  clip: 5
  noise_multiplier: 0
server:
  lr: 1
  momentum: 0.5
eval:
  every: 5
  batch: 64
`
}

// TestDataConfigDefaults: the new keys get their documented defaults, and
// the saved config records them.
func TestDataConfigDefaults(t *testing.T) {
	cfg, _, err := Load([]byte(textYAML("c.jsonl")), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, m := cfg.Data, cfg.Model
	if d.Partition != "user" || d.TestFraction != 0.2 || d.Vocab != 40 || d.SeqLen != 8 || d.MinTokens != 20 || m.Proj != 8 {
		t.Fatalf("text defaults: %+v %+v", d, m)
	}
	deb := strings.NewReplacer("  dataset: text\n", "  dataset: debian\n", "  path: c.jsonl\n", "", "  vocab: 40\n  seq_len: 8\n  min_tokens: 20\n", "",
		"  embed: 8\n  hidden: [24]\n", "").Replace(textYAML("c.jsonl"))
	cfg, _, err = Load([]byte(deb), "d.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, m = cfg.Data, cfg.Model
	if d.Changelogs != datasets.DebianPinned || d.Vocab != 1000 || d.SeqLen != 20 || d.MinTokens != 100 || d.Partition != "user" {
		t.Fatalf("debian defaults: %+v", d)
	}
	if len(m.Hidden) != 1 || m.Hidden[0] != 128 || m.Embed != 32 || m.Proj != 32 {
		t.Fatalf("lstm defaults: %+v", m)
	}
	w := strings.Replace(validYAML, "  clients: 100\n", "  partition: writer\n", 1)
	w = strings.Replace(w, "kind: logreg", "kind: cnn", 1)
	cfg, _, err = Load([]byte(w), "w.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Data.TestFraction != 0.1 || cfg.Data.Clients != 0 || cfg.Data.QMNISTDir != "" {
		t.Fatalf("writer defaults: %+v", cfg.Data)
	}
}

// TestDataConfigErrors: each bad use of the data and model keys is reported
// with the file, line, key and reason.
func TestDataConfigErrors(t *testing.T) {
	text := textYAML("c.jsonl")
	writer := strings.Replace(validYAML, "  clients: 100\n", "  partition: writer\n", 1)
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"lstm on images", strings.Replace(validYAML, "kind: logreg", "kind: lstm", 1),
			[]string{"c.yaml:8: model.kind: lstm predicts the next word of text: it needs dataset debian, text, tff-stackoverflow, tff-shakespeare or leaf, not mnist"}},
		{"cnn on text", strings.NewReplacer("kind: lstm", "kind: cnn", "  embed: 8\n  hidden: [24]\n", "").Replace(text),
			[]string{"c.yaml:11: model.kind: cnn classifies images, but dataset text is next-word text: use lstm"}},
		{"text without path", strings.Replace(text, "  path: c.jsonl\n", "", 1),
			[]string{"c.yaml:4: data.path: required for dataset text"}},
		{"writer on text", strings.Replace(text, "  dataset: text\n", "  dataset: text\n  partition: writer\n", 1),
			[]string{"c.yaml:6: data.partition: text text is split by user (one client per user): partition must be user (or unset), not writer"}},
		{"user on mnist", strings.Replace(validYAML, "  clients: 100\n", "  partition: user\n", 1),
			[]string{"c.yaml:6: data.partition: user is the partition of the text datasets"}},
		{"vocab on mnist", strings.Replace(validYAML, "  clients: 100\n", "  clients: 100\n  vocab: 500\n", 1),
			[]string{"c.yaml:7: data.vocab: only dataset debian, text, tff-stackoverflow or tff-shakespeare uses it"}},
		{"negative seq_len", strings.Replace(text, "seq_len: 8", "seq_len: -3", 1),
			[]string{"c.yaml:8: data.seq_len: -3 must be positive"}},
		{"test fraction range", strings.Replace(writer, "  partition: writer\n", "  partition: writer\n  test_fraction: 1.5\n", 1),
			[]string{"c.yaml:7: data.test_fraction: 1.5 must be in (0, 1)"}},
		{"test fraction on iid", strings.Replace(validYAML, "  clients: 100\n", "  clients: 100\n  test_fraction: 0.1\n", 1),
			[]string{"c.yaml:7: data.test_fraction: only partitions writer and user"}},
		{"qmnist_dir on iid", strings.Replace(validYAML, "  clients: 100\n", "  clients: 100\n  qmnist_dir: q\n", 1),
			[]string{"c.yaml:7: data.qmnist_dir: only partition writer uses it"}},
		{"negative writer clients", strings.Replace(writer, "  partition: writer\n", "  partition: writer\n  clients: -1\n", 1),
			[]string{"c.yaml:7: data.clients: -1 must not be negative (0 or unset: every writer in the data)"}},
		{"iid needs clients", strings.Replace(validYAML, "  clients: 100\n", "", 1),
			[]string{"c.yaml:4: data.clients: required (a positive integer)"}},
		{"alpha on iid", strings.Replace(validYAML, "  clients: 100\n", "  clients: 100\n  alpha: 0.3\n", 1),
			[]string{"c.yaml:7: data.alpha: only partition dirichlet uses it"}},
		{"changelogs on text", strings.Replace(text, "  path: c.jsonl\n", "  path: c.jsonl\n  changelogs: x\n", 1),
			[]string{"c.yaml:7: data.changelogs: only dataset debian uses it"}},
		{"embed on mlp", strings.Replace(validYAML, "kind: logreg", "kind: mlp\n  embed: 16", 1),
			[]string{"c.yaml:9: model.embed: only model kind lstm uses it"}},
		{"lstm two layers", strings.Replace(text, "hidden: [24]", "hidden: [24, 24]", 1),
			[]string{"c.yaml:13: model.hidden: lstm takes one width (its LSTM layer's), got 2"}},
		{"cnn hidden", strings.Replace(validYAML, "kind: logreg", "kind: cnn\n  hidden: [10]", 1),
			[]string{"c.yaml:9: model.hidden: cnn has fixed layers"}},
		{"unknown data key", strings.Replace(text, "  vocab: 40\n", "  vocabulary: 40\n", 1),
			[]string{`c.yaml:7: data.vocabulary: unknown key "vocabulary"`, "min_tokens", "qmnist_dir", "seq_len"}},
		{"wrong type", strings.Replace(text, "  vocab: 40\n", "  vocab: many\n", 1),
			[]string{`c.yaml:7: data.vocab: cannot use "many" as an integer`}},
		{"unknown dataset", strings.Replace(validYAML, "dataset: mnist", "dataset: emnist", 1),
			[]string{`c.yaml:5: data.dataset: unknown value "emnist" (want one of [mnist debian text tff-emnist tff-stackoverflow tff-shakespeare leaf])`}},
	}
	for _, c := range cases {
		_, _, err := Load([]byte(c.yaml), "c.yaml")
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error\n%v\ndoes not contain %q", c.name, err, w)
			}
		}
	}
}

// TestMissingQMNISTNamesKey: without the label files the writer partition
// fails at planning (run and account alike), naming data.qmnist_dir, the
// missing file and where to get it.
func TestMissingQMNISTNamesKey(t *testing.T) {
	y := strings.Replace(validYAML, "  clients: 100\n", "  partition: writer\n  qmnist_dir: "+t.TempDir()+"\n", 1)
	cfg, _, err := Load([]byte(y), "w.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(context.Context, *Config, Options) (*Plan, error){"NewAccount": NewAccount, "NewPlan": NewPlan} {
		_, err := f(context.Background(), cfg, Options{})
		if err == nil {
			t.Fatalf("%s: no error without QMNIST files", name)
		}
		for _, w := range []string{"data.qmnist_dir", datasets.QMNISTTrainLabels + " not found", "github.com/facebookresearch/qmnist"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", name, err, w)
			}
		}
	}
}

// qmnistDir finds the QMNIST label files as datasets' tests do:
// $DPFL_QMNIST_DIR, else shared/data/qmnist beside the repository (found by
// walking up from the package folder: ../../shared/data/qmnist here).
func qmnistDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv(datasets.QMNISTDirEnv); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		c := filepath.Join(d, "shared", "data", "qmnist")
		if _, err := os.Stat(filepath.Join(c, datasets.QMNISTTrainLabels)); err == nil {
			return c
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	t.Skipf("QMNIST label files not found: no $%s and no shared/data/qmnist above %s (expected %s from https://github.com/facebookresearch/qmnist)",
		datasets.QMNISTDirEnv, wd, datasets.QMNISTTrainLabels)
	return ""
}

// distinctWriters counts the writer IDs (column 2) of the 60,000 train rows
// and the first 10,000 test rows, independently of package datasets.
func distinctWriters(t *testing.T, dir string) int {
	t.Helper()
	seen := map[string]bool{}
	for name, rows := range map[string]int{datasets.QMNISTTrainLabels: 60000, datasets.QMNISTTestLabels: 10000} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(zr)
		for i := 0; i < rows && sc.Scan(); i++ {
			seen[strings.Split(sc.Text(), "\t")[2]] = true
		}
		f.Close()
	}
	return len(seen)
}

// TestWriterRun: a short run on MNIST by writer has one client per NIST
// writer (the count read from the label files here), `dpfl account`'s plan
// sees the same population without the images, and the run is reproducible
// (identical metrics for 1 and 2 workers).
func TestWriterRun(t *testing.T) {
	t.Parallel()
	dir := qmnistDir(t)
	y := strings.NewReplacer("rounds: 5", "rounds: 4", "  clients: 100\n", "  partition: writer\n  qmnist_dir: "+dir+"\n",
		"cohort: 10", "cohort: 20", "noise_multiplier: 0", "noise_multiplier: 0.5\nprivacy:\n  delta: 1.0e-4").Replace(validYAML) +
		"eval:\n  every: 2\n"
	cfg, _, err := Load([]byte(y), "w.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := distinctWriters(t, dir)
	acct, err := NewAccount(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if acct.Clients != want || acct.Data != nil {
		t.Fatalf("account plan: %d clients (data loaded: %v), the label files have %d writers", acct.Clients, acct.Data != nil, want)
	}
	var first []byte
	for _, workers := range []int{1, 2} {
		plan, err := NewPlan(context.Background(), cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if plan.Clients != want || plan.Data.NumClients() != want || plan.Schedule.NumClients != want {
			t.Fatalf("plan: %d clients, data %d, schedule %d; want %d writers", plan.Clients, plan.Data.NumClients(), plan.Schedule.NumClients, want)
		}
		if plan.Data.Test.Len() < 5000 || plan.Data.Test.Len() > 8000 {
			t.Fatalf("central test set of %d digits, want about 10%% of 70,000", plan.Data.Test.Len())
		}
		if s := plan.Summary().Participation; !strings.Contains(s, fmt.Sprintf("of %d clients", want)) {
			t.Fatalf("summary participation %q does not name %d clients", s, want)
		}
		out, err := plan.Run(context.Background(), Options{OutDir: t.TempDir(), Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		if acc := out.Summary.FinalAccuracy; !(acc > 0.2) {
			t.Fatalf("accuracy %.4f after 4 rounds of 20 writers: not learning", acc)
		}
		b, err := os.ReadFile(filepath.Join(out.Dir, "metrics.csv"))
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = b
		} else if !bytes.Equal(first, b) {
			t.Fatalf("metrics differ between 1 and 2 workers:\n%s\nvs\n%s", first, b)
		}
	}
}

// writeCorpus writes a JSONL corpus of users whose documents follow a Markov
// chain over words w0..w29: each word is followed by its successor
// (k·7+3 mod 30) with probability 0.8, else by a random word. Returns the
// path and the number of users.
func writeCorpus(t *testing.T) (string, int) {
	t.Helper()
	const users, docs, words = 9, 12, 30
	r := rand.New(rand.NewPCG(3, 4))
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for u := 0; u < users; u++ {
		for d := 0; d < docs; d++ {
			k := r.IntN(words)
			var toks []string
			for n := 6 + r.IntN(10); n > 0; n-- {
				toks = append(toks, "w"+strconv.Itoa(k))
				if r.Float64() < 0.8 {
					k = (k*7 + 3) % words
				} else {
					k = r.IntN(words)
				}
			}
			if err := enc.Encode(map[string]string{"user": fmt.Sprintf("user%d", u), "text": strings.Join(toks, " ")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "corpus.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, users
}

// TestTextRun: an LSTM trains on a user-attributed JSONL corpus through Run:
// one client per user, the test loss falls below 0.85 ln(V) (ln(V) is the
// untrained model's) and below its value after 5 rounds, and the accuracy
// (word targets only) beats always predicting the most frequent word of the
// test set by 0.1.
func TestTextRun(t *testing.T) {
	path, users := writeCorpus(t)
	cfg, _, err := Load([]byte(textYAML(path)), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := NewPlan(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Clients != users || plan.Data.Vocab == nil {
		t.Fatalf("%d clients, want one per user (%d)", plan.Clients, users)
	}
	acct, err := NewAccount(context.Background(), cfg, Options{})
	if err != nil || acct.Clients != users {
		t.Fatalf("account plan: %d clients, error %v; want %d", acct.Clients, err, users)
	}
	// Trivial baseline: the most frequent counted target of the test set.
	count, n := map[int32]int{}, 0
	for _, tg := range plan.Data.Test.Next {
		if tg != datasets.PadID && tg != datasets.OOVID && tg != datasets.EOSID {
			count[tg]++
			n++
		}
	}
	best := 0
	for _, c := range count {
		best = max(best, c)
	}
	baseline := float64(best) / float64(n)
	out, err := plan.Run(context.Background(), Options{OutDir: t.TempDir(), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	rows := readMetrics(t, out.Dir)
	uniform := math.Log(float64(plan.Data.Train.Classes))
	firstLoss, _ := strconv.ParseFloat(rows[1][4], 64)
	s := out.Summary
	t.Logf("test loss %.3f after 5 rounds, %.3f after 20 (uniform %.3f); accuracy %.3f, baseline %.3f", firstLoss, s.FinalTestLoss, uniform, s.FinalAccuracy, baseline)
	if !(s.FinalTestLoss < 0.85*uniform) || !(s.FinalTestLoss < firstLoss) {
		t.Fatalf("test loss %.3f (after 5 rounds %.3f, uniform %.3f): the LSTM is not learning", s.FinalTestLoss, firstLoss, uniform)
	}
	if !(s.FinalAccuracy > baseline+0.1) {
		t.Fatalf("accuracy %.3f does not beat the most-frequent-word baseline %.3f", s.FinalAccuracy, baseline)
	}
	// summary.json's majority_accuracy predicts the most frequent word of
	// the training targets: at most the test set's own most frequent word
	// (the baseline above), and no image run has one.
	if m := s.MajorityAccuracy; m == nil || !(*m > 0 && *m <= baseline) {
		t.Fatalf("majority_accuracy %v, want in (0, %.3f]", m, baseline)
	}

	// data.clients keeps a random subset of the users; the central test
	// set shrinks to their held-out windows.
	cfg.Data.Clients = 4
	sub, err := NewPlan(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sub.Clients != 4 || len(sub.Data.Users) != 4 || !(sub.Data.Test.Len() < plan.Data.Test.Len()) {
		t.Fatalf("subset: %d clients, users %v, test %d of %d windows", sub.Clients, sub.Data.Users, sub.Data.Test.Len(), plan.Data.Test.Len())
	}
	cfg.Data.Clients = users + 1
	if _, err := NewPlan(context.Background(), cfg, Options{}); err == nil || !strings.Contains(err.Error(), "data.clients: 10 clients asked for, but text has 9 users") {
		t.Fatalf("too many clients: error %v", err)
	}
}

// TestExampleConfigsAreValid: the example configs decode and validate, and
// say what their comments say.
func TestExampleConfigsAreValid(t *testing.T) {
	w, _, err := LoadFile("emnist-writers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if w.Data.Partition != "writer" || w.Participation.Kind != "minsep" || w.Participation.Availability.Kind != "diurnal" ||
		w.Aggregator.Kind == "dpfedavg" || !w.Private() {
		t.Fatalf("emnist-writers.yaml: %+v", w)
	}
	d, _, err := LoadFile("debian-nwp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d.Data.Dataset != "debian" || d.Model.Kind != "lstm" || d.Data.Vocab != 1000 || d.Model.Embed != 32 {
		t.Fatalf("debian-nwp.yaml: %+v", d)
	}
}
