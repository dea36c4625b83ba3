package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestDataUsage(t *testing.T) {
	if code, _, errs := runCLI("data", "-h"); code != exitOK || !strings.Contains(errs, "-partition") || !strings.Contains(errs, "DATASET") {
		t.Fatalf("data -h: exit %d, %q", code, errs)
	}
	for _, args := range [][]string{
		{"data"},
		{"data", "mnist", "debian"},
		{"data", "cifar"},
		{"data", "-bogus", "mnist"},
		{"data", "text"},
		{"data", "-partition", "shards", "mnist"},
		{"data", "tff-emnist"},
		{"data", "leaf"},
	} {
		code, _, errs := runCLI(args...)
		if code != exitUsage || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.HasPrefix(errs, "dpfl data: ") {
			t.Errorf("%q: exit %d, stderr %q; want %d and one line", args, code, errs, exitUsage)
		}
	}
}

// TestDataWriterMissingQMNIST: a one-line failure that says where to get the
// files and what works without them.
func TestDataWriterMissingQMNIST(t *testing.T) {
	t.Setenv("DPFL_QMNIST_DIR", "")
	code, _, errs := runCLI("data", "-qmnist", t.TempDir(), "-plot", "none", "mnist")
	if code != exitFailure || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Fatalf("exit %d, %q", code, errs)
	}
	for _, s := range []string{"github.com/facebookresearch/qmnist", "iid", "dirichlet"} {
		if !strings.Contains(errs, s) {
			t.Errorf("error %q lacks %q", errs, s)
		}
	}
}

// field returns the integers after label on the output line starting with it.
func field(t *testing.T, out, label string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, label) {
			return regexp.MustCompile(`[0-9.]+`).FindAllString(line[len(label):], -1)
		}
	}
	t.Fatalf("no %q line in\n%s", label, out)
	return nil
}

// TestDataText: a generated JSONL corpus (unit tests only) where the users'
// sizes are known: user k has k+1 documents of 50 tokens; -min-tokens 100
// with held-out share 0.2 keeps users whose training part has at least 2
// documents, i.e. k+1 - floor(0.2(k+1)) >= 2, which is k >= 1.
func TestDataText(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for k := 0; k < 6; k++ {
		for d := 0; d <= k; d++ {
			fmt.Fprintf(&b, `{"user": "u%d", "text": "%s"}`+"\n", k, strings.Repeat(fmt.Sprintf("w%d x y%d ", d, k), 16)+"end of doc")
		}
	}
	path := filepath.Join(dir, "corpus.jsonl")
	os.WriteFile(path, []byte(b.String()), 0o644)
	png := filepath.Join(dir, "h.png")
	code, out, errs := runCLI("data", "-path", path, "-plot", png, "-seq", "10", "-vocab", "3", "text")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if got := field(t, out, "clients"); got[0] != "5" {
		t.Fatalf("clients %v, want 5\n%s", got, out)
	}
	// 51 tokens + BOS/EOS = 52 targets = 6 windows of 10 per document;
	// user k keeps k+1 - floor(0.2(k+1)) documents: k=1..5 -> 2,3,4,4,5.
	if got := field(t, out, "examples/client"); strings.Join(got, " ") != "12 24 30 108" {
		t.Fatalf("examples/client %v, want min 12 median 24 max 30 total 108\n%s", got, out)
	}
	if got := field(t, out, "vocabulary"); got[0] != "7" {
		t.Fatalf("vocabulary %v, want 7 ids\n%s", got, out)
	}
	raw, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(raw, []byte("\x89PNG")) {
		t.Fatalf("plot not written as PNG: %v", err)
	}
}

func TestDataMNISTDirichlet(t *testing.T) {
	code, out, errs := runCLI("data", "-partition", "dirichlet", "-clients", "50", "-alpha", "0.1", "-plot", "none", "mnist")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// Equal sizes of floor(60000/50).
	if got := strings.Join(field(t, out, "examples/client"), " "); got != "1200 1200 1200 60000" {
		t.Fatalf("examples/client %q\n%s", got, out)
	}
}

// TestDataMNISTWriters: the client count equals the distinct writer IDs of
// the QMNIST metadata (counted here), when the files are available.
func TestDataMNISTWriters(t *testing.T) {
	dir := os.Getenv("DPFL_QMNIST_DIR")
	if dir == "" {
		wd, _ := os.Getwd()
		for d := wd; filepath.Dir(d) != d; d = filepath.Dir(d) {
			if c := filepath.Join(d, "shared", "data", "qmnist"); fileExists(filepath.Join(c, "qmnist-train-labels.tsv.gz")) {
				dir = c
				break
			}
		}
	}
	if dir == "" {
		t.Skip("QMNIST label files not found: expected in $DPFL_QMNIST_DIR or shared/data/qmnist beside the repository")
	}
	writers := map[string]bool{}
	for name, max := range map[string]int{"qmnist-train-labels.tsv.gz": 60000, "qmnist-test-labels.tsv.gz": 10000} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(zr)
		for n := 0; n < max && sc.Scan(); n++ {
			writers[strings.Split(sc.Text(), "\t")[2]] = true
		}
		f.Close()
	}
	png := filepath.Join(t.TempDir(), "w.png")
	code, out, errs := runCLI("data", "-qmnist", dir, "-plot", png, "mnist")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if got := field(t, out, "clients"); got[0] != fmt.Sprint(len(writers)) {
		t.Fatalf("clients %v, metadata has %d writers", got, len(writers))
	}
	if !fileExists(png) {
		t.Fatal("no plot written")
	}
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// TestDataMNISTDirEnv: the CLI reads $DPFL_MNIST_DIR (the library reads no
// environment variable) and a folder without the files is a one-line
// failure naming it and the variable.
func TestDataMNISTDirEnv(t *testing.T) {
	empty := t.TempDir()
	t.Setenv("DPFL_MNIST_DIR", empty)
	code, _, errs := runCLI("data", "-partition", "iid", "-plot", "none", "mnist")
	if code != exitFailure || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, empty) || !strings.Contains(errs, "$DPFL_MNIST_DIR") {
		t.Fatalf("exit %d, stderr %q: want a failure naming %s and $DPFL_MNIST_DIR", code, errs, empty)
	}
}

// TestDataLEAF: dpfl data reads a LEAF Shakespeare folder (the kind told by
// the data), and -clients keeps a subset.
func TestDataLEAF(t *testing.T) {
	dir := t.TempDir()
	line := strings.Repeat("Now is the winter of our discontent made glorious summer. ", 3)
	for _, split := range []string{"train", "test"} {
		os.MkdirAll(filepath.Join(dir, split), 0o755)
		var users, data []string
		for u := 0; u < 5; u++ {
			name := fmt.Sprintf("RICHARD_%d", u)
			users = append(users, fmt.Sprintf("%q", name))
			var xs, ys []string
			for k := 0; k < 3; k++ {
				xs, ys = append(xs, fmt.Sprintf("%q", line[k+u:k+u+80])), append(ys, fmt.Sprintf("%q", line[k+u+80:k+u+81]))
			}
			data = append(data, fmt.Sprintf(`%q: {"x": [%s], "y": [%s]}`, name, strings.Join(xs, ","), strings.Join(ys, ",")))
		}
		js := fmt.Sprintf(`{"users": [%s], "user_data": {%s}}`, strings.Join(users, ","), strings.Join(data, ","))
		os.WriteFile(filepath.Join(dir, split, "data.json"), []byte(js), 0o644)
	}
	code, out, errs := runCLI("data", "-path", dir, "-plot", "none", "leaf")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "leaf-shakespeare") || field(t, out, "clients")[0] != "5" || !strings.Contains(out, "sequences of 80 tokens; 1200 training targets") {
		t.Fatalf("output:\n%s", out)
	}
	code, out, errs = runCLI("data", "-path", dir, "-plot", "none", "-clients", "2", "leaf")
	if code != exitOK || field(t, out, "clients")[0] != "2" {
		t.Fatalf("subset: exit %d %s\n%s", code, errs, out)
	}
}
