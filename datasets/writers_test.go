package datasets

import (
	"bufio"
	"compress/gzip"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// qmnistTestDir finds the QMNIST label files for tests: $DPFL_QMNIST_DIR, else
// shared/data/qmnist beside the repository (CI keeps shared/ next to the
// clone), found by walking up from the working directory.
func qmnistTestDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv(QMNISTDirEnv); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		c := filepath.Join(d, "shared", "data", "qmnist")
		if _, err := os.Stat(filepath.Join(c, QMNISTTrainLabels)); err == nil {
			return c
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	t.Skipf("QMNIST label files not found: expected %s and %s in $%s or in shared/data/qmnist beside the repository (from https://github.com/facebookresearch/qmnist)",
		QMNISTTrainLabels, QMNISTTestLabels, QMNISTDirEnv)
	return ""
}

// countWriters tallies column 2 of the first max rows (all if max <= 0) of a
// gzipped TSV, independently of ReadQMNISTLabels.
func countWriters(t *testing.T, path string, max int, into map[string]int) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	rows := 0
	for sc.Scan() && (max <= 0 || rows < max) {
		into[strings.Split(sc.Text(), "\t")[2]]++
		rows++
	}
	return rows
}

// TestWriterPartitionMatchesQMNIST: one client per distinct writer ID over
// the 60,000 train rows and the first 10,000 test rows, each client's train
// and held-out parts together the size the metadata gives that writer, no
// example in two clients or two parts, every pooled example used once, and
// the held-out share near the requested 10%.
func TestWriterPartitionMatchesQMNIST(t *testing.T) {
	dir := qmnistTestDir(t)
	want := map[string]int{}
	if n := countWriters(t, filepath.Join(dir, QMNISTTrainLabels), 0, want); n != 60000 {
		t.Fatalf("train TSV has %d rows, want 60000", n)
	}
	if n := countWriters(t, filepath.Join(dir, QMNISTTestLabels), 10000, want); n != 10000 {
		t.Fatalf("test TSV has %d rows, want at least 10000", n)
	}
	train, test, err := LoadMNIST("")
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFederated("w", train, test, PartitionSpec{Kind: Writer, QMNISTDir: dir}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if f.NumClients() != len(want) {
		t.Fatalf("%d clients, QMNIST has %d distinct writers", f.NumClients(), len(want))
	}
	t.Logf("%d writers over %d pooled images; %d held out", len(want), f.Train.Len(), f.Test.Len())
	sizes := map[int]int{} // client size -> number of clients, from the partition
	for c := range f.Clients {
		sizes[len(f.Clients[c])+len(f.ClientTest[c])]++
	}
	wantSizes := map[int]int{}
	for _, n := range want {
		wantSizes[n]++
	}
	if len(sizes) != len(wantSizes) {
		t.Fatalf("client size histogram has %d sizes, metadata %d", len(sizes), len(wantSizes))
	}
	for n, k := range wantSizes {
		if sizes[n] != k {
			t.Fatalf("%d clients of size %d, metadata says %d", sizes[n], n, k)
		}
	}
	// Per writer, not only per histogram: every client is one writer.
	qtrain, qtest, err := LoadQMNISTWriters(dir)
	if err != nil {
		t.Fatal(err)
	}
	writerOf := append(append([]int32{}, qtrain.Writer...), qtest.Writer...)
	used := make([]int, f.Train.Len())
	held := 0
	for c, idx := range f.Clients {
		w := writerOf[idx[0]]
		for _, i := range idx {
			used[i]++
			if writerOf[i] != w {
				t.Fatalf("client %d mixes writers %d and %d", c, w, writerOf[i])
			}
		}
		held += len(f.ClientTest[c])
		if got := len(idx) + len(f.ClientTest[c]); got != want[itoa(w)] {
			t.Fatalf("writer %d: %d examples, metadata %d", w, got, want[itoa(w)])
		}
	}
	// f.Validate already rejects overlaps; held-out examples are copies, so
	// count the pool's coverage: training parts plus held-out parts = 70,000.
	trainUsed := 0
	for _, u := range used {
		if u > 1 {
			t.Fatal("example in two clients")
		}
		trainUsed += u
	}
	if trainUsed+held != 70000 {
		t.Fatalf("%d train + %d held-out = %d, want 70000", trainUsed, held, trainUsed+held)
	}
	if frac := float64(held) / 70000; frac < 0.08 || frac > 0.1 {
		t.Fatalf("held-out fraction %.3f, want about 0.1 (floor per writer)", frac)
	}
}

func itoa(w int32) string { return strconv.Itoa(int(w)) }

func fmtInt(n int) string { return strconv.Itoa(n) }

// TestPartitionWriters on a small hand-made writer list.
func TestPartitionWriters(t *testing.T) {
	writers := []int32{7, 3, 7, 7, 3, 9, 7, 7, 7, 7, 7, 7}
	ids, train, test, err := PartitionWriters(writers, 0.25, rand.New(rand.NewPCG(5, 5)))
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 || ids[0] != 3 || ids[1] != 7 || ids[2] != 9 {
		t.Fatalf("ids %v, want [3 7 9]", ids)
	}
	// Writer 3: 2 examples, floor(0.5) = 0 held out; writer 7: 9 examples,
	// 2 held out; writer 9: 1 example, kept for training.
	for c, want := range [][2]int{{2, 0}, {7, 2}, {1, 0}} {
		if len(train[c]) != want[0] || len(test[c]) != want[1] {
			t.Errorf("writer %d: %d train %d test, want %v", ids[c], len(train[c]), len(test[c]), want)
		}
		for _, i := range append(append([]int{}, train[c]...), test[c]...) {
			if writers[i] != ids[c] {
				t.Errorf("writer %d got example %d of writer %d", ids[c], i, writers[i])
			}
		}
	}
	if _, _, _, err := PartitionWriters(writers, 1, rand.New(rand.NewPCG(5, 5))); err == nil {
		t.Error("test fraction 1 accepted")
	}
}

func TestReadQMNISTLabels(t *testing.T) {
	in := "5\t4\t2154\t59\t35\t229421\t0\t0\n0\t0\t0\t0\t30\t0\t0\t0\n4\t4\t2232\t65\t34\t238481\t0\t0\n"
	l, err := ReadQMNISTLabels(strings.NewReader(in), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Class) != 2 || l.Class[0] != 5 || l.Writer[0] != 2154 || l.Class[1] != 0 || l.Writer[1] != 0 {
		t.Fatalf("got %+v", l)
	}
	for _, bad := range []string{"", "5\t4\n", "x\t4\t3\n", "11\t4\t3\n"} {
		if _, err := ReadQMNISTLabels(strings.NewReader(bad), 0); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestWriterPartitionMissingFiles: the error names where to get the files and
// the partitions that work without them.
func TestWriterPartitionMissingFiles(t *testing.T) {
	t.Setenv(QMNISTDirEnv, "")
	d := &Dataset{X: make([]float32, 4), Y: make([]int32, 4), Dim: 1, Classes: 10}
	for _, dir := range []string{"", t.TempDir()} {
		_, err := NewFederated("w", d, d, PartitionSpec{Kind: Writer, QMNISTDir: dir}, rand.New(rand.NewPCG(1, 1)))
		if err == nil {
			t.Fatal("no error without QMNIST files")
		}
		for _, s := range []string{"github.com/facebookresearch/qmnist", "BSD", "iid", "dirichlet", QMNISTDirEnv, QMNISTTrainLabels} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error %q does not mention %q", err, s)
			}
		}
	}
}

// TestWriterPartitionRejectsMisalignedLabels: files whose class column does
// not match MNIST fail.
func TestWriterPartitionRejectsMisalignedLabels(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, rows int) {
		f, _ := os.Create(filepath.Join(dir, name))
		zw := gzip.NewWriter(f)
		for i := 0; i < rows; i++ {
			zw.Write([]byte(fmtInt(i%10) + "\t0\t" + fmtInt(i%3) + "\t0\t0\t0\t0\t0\n"))
		}
		zw.Close()
		f.Close()
	}
	write(QMNISTTrainLabels, 6)
	write(QMNISTTestLabels, 20)
	mk := func(n int) *Dataset {
		d := &Dataset{X: make([]float32, n), Y: make([]int32, n), Dim: 1, Classes: 10}
		for i := range d.Y {
			d.Y[i] = int32(i % 10)
		}
		return d
	}
	train, test := mk(6), mk(10000)
	test.Y = test.Y[:10000]
	// 10,000 aligned test rows wanted but the fixture has 20: a size mismatch.
	if _, err := NewWriterFederated(train, test, WriterOptions{QMNISTDir: dir}, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "aligned test rows") {
		t.Fatalf("short test file: %v", err)
	}
	write(QMNISTTestLabels, 4)
	test = mk(4)
	f, err := NewWriterFederated(train, test, WriterOptions{QMNISTDir: dir}, rand.New(rand.NewPCG(1, 1)))
	if err != nil || f.NumClients() != 3 {
		t.Fatalf("aligned fixture: %v, %v", f, err)
	}
	train.Y[2] = 7
	if _, err := NewWriterFederated(train, test, WriterOptions{QMNISTDir: dir}, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "do not align") {
		t.Fatalf("misaligned labels: %v", err)
	}
}
