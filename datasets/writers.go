package datasets

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Writer is the partition that gives each NIST writer of an MNIST digit its
// own client (see NewWriterFederated).
const Writer = "writer"

// QMNISTDirEnv names the environment variable from which dpfl's CLI takes
// the default folder of the QMNIST label files (Loader.QMNISTDefault); the
// package itself reads no environment variable.
const QMNISTDirEnv = "DPFL_QMNIST_DIR"

// QMNIST label files: tab-separated, gzipped, one row per image. Column 0 is
// the digit class, column 2 the NIST writer ID. The train file's rows align
// one to one with the MNIST training images; the first MNISTTestAligned rows
// of the test file align with the MNIST test images (the rest are QMNIST's
// reconstructed extra digits).
const (
	QMNISTTrainLabels = "qmnist-train-labels.tsv.gz"
	QMNISTTestLabels  = "qmnist-test-labels.tsv.gz"
	MNISTTestAligned  = 10000
)

// qmnistHelp says where the files come from and what works without them.
const qmnistHelp = "get " + QMNISTTrainLabels + " and " + QMNISTTestLabels +
	" from QMNIST (https://github.com/facebookresearch/qmnist, BSD licence) and give their folder (dpfl data -qmnist DIR, or $" +
	QMNISTDirEnv + "); the iid and dirichlet partitions need no extra files"

// QMNISTDir returns dir if it holds the QMNIST label files. The error says
// where to get the files.
func QMNISTDir(dir string) (string, error) { return new(Loader).QMNISTDir(dir) }

// QMNISTDir returns the folder holding the QMNIST label files: dir if
// non-empty, else l.QMNISTDefault. The error says where to get the files.
func (l *Loader) QMNISTDir(dir string) (string, error) {
	src := "the given folder"
	if dir == "" {
		dir, src = l.QMNISTDefault, l.source(l.QMNISTDefaultSource)
	}
	if dir == "" {
		return "", fmt.Errorf("datasets: the writer partition needs the QMNIST label files and no folder was given; %s", qmnistHelp)
	}
	for _, name := range []string{QMNISTTrainLabels, QMNISTTestLabels} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.IsDir() {
			return "", fmt.Errorf("datasets: %s not found in %s (%s); %s", name, dir, src, qmnistHelp)
		}
	}
	return dir, nil
}

// QMNISTLabels holds the columns of a QMNIST label file that dpfl uses.
type QMNISTLabels struct {
	Class  []int32 // digit class (column 0)
	Writer []int32 // NIST writer ID (column 2)
}

// ReadQMNISTLabels decodes a QMNIST label file (gzipped or not), reading at
// most max rows (all when max <= 0).
func ReadQMNISTLabels(r io.Reader, max int) (*QMNISTLabels, error) {
	br := bufio.NewReader(r)
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("datasets: gzip: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	out := &QMNISTLabels{}
	sc := bufio.NewScanner(br)
	for line := 1; sc.Scan(); line++ {
		if max > 0 && len(out.Class) == max {
			break
		}
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			return nil, fmt.Errorf("datasets: QMNIST line %d has %d columns, want at least 3", line, len(f))
		}
		class, err1 := strconv.ParseInt(f[0], 10, 32)
		writer, err2 := strconv.ParseInt(f[2], 10, 32)
		if err := errors.Join(err1, err2); err != nil || class < 0 || class > 9 || writer < 0 {
			return nil, fmt.Errorf("datasets: QMNIST line %d: bad class or writer %q %q", line, f[0], f[2])
		}
		out.Class = append(out.Class, int32(class))
		out.Writer = append(out.Writer, int32(writer))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("datasets: QMNIST: %w", err)
	}
	if len(out.Class) == 0 {
		return nil, errors.New("datasets: QMNIST label file is empty")
	}
	return out, nil
}

// LoadQMNISTWriters reads the QMNIST label files in dir (see QMNISTDir) and
// returns the labels aligned with MNIST train (60,000 rows) and MNIST test
// (the first 10,000 rows of the test file).
func LoadQMNISTWriters(dir string) (train, test *QMNISTLabels, err error) {
	return new(Loader).LoadQMNISTWriters(dir)
}

// LoadQMNISTWriters is the package's LoadQMNISTWriters with an empty dir
// resolved as l.QMNISTDir does.
func (l *Loader) LoadQMNISTWriters(dir string) (train, test *QMNISTLabels, err error) {
	if dir, err = l.QMNISTDir(dir); err != nil {
		return nil, nil, err
	}
	read := func(name string, max int) (*QMNISTLabels, error) {
		f, err := openRegular(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		l, err := ReadQMNISTLabels(f, max)
		if err != nil {
			return nil, fmt.Errorf("%w (in %s)", err, f.Name())
		}
		return l, nil
	}
	if train, err = read(QMNISTTrainLabels, 0); err != nil {
		return nil, nil, err
	}
	if test, err = read(QMNISTTestLabels, MNISTTestAligned); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// PartitionWriters groups examples by writer: client c gets every example i
// with writers[i] == ids[c], ids sorted ascending. Each client's examples are
// shuffled with r and the first floor(testFraction*n) go to its test part
// (never all of them: a client keeps at least one training example). Indices
// refer to the writers slice; within each part they are ascending.
func PartitionWriters(writers []int32, testFraction float64, r *rand.Rand) (ids []int32, train, test [][]int, err error) {
	if !(testFraction >= 0 && testFraction < 1) {
		return nil, nil, nil, fmt.Errorf("datasets: test fraction %v outside [0, 1)", testFraction)
	}
	if len(writers) == 0 {
		return nil, nil, nil, errors.New("datasets: no examples to partition by writer")
	}
	byWriter := map[int32][]int{}
	for i, w := range writers {
		byWriter[w] = append(byWriter[w], i)
	}
	for w := range byWriter {
		ids = append(ids, w)
	}
	slices.Sort(ids)
	train, test = make([][]int, len(ids)), make([][]int, len(ids))
	for c, w := range ids {
		idx := byWriter[w]
		r.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		k := min(int(testFraction*float64(len(idx))), len(idx)-1)
		test[c], train[c] = idx[:k:k], idx[k:]
		slices.Sort(test[c])
		slices.Sort(train[c])
	}
	return ids, train, test, nil
}

// WriterOptions configures NewWriterFederated.
type WriterOptions struct {
	QMNISTDir    string  // folder of the QMNIST label files
	TestFraction float64 // share of each writer's examples held out (default 0.1)
	Clients      int     // 0: every writer; else a random subset of this many writers
}

// NewWriterFederated partitions MNIST by NIST writer, as federated EMNIST
// does: the MNIST training images and the MNIST test images are pooled (their
// writers are disjoint), each writer is one client, and each client's
// examples are split into its own training and test parts. The returned
// Train is the 70,000-image pool (train images first, then test images);
// Clients index it. Test is the union of the clients' held-out parts, in
// client order, and ClientTest indexes it; it is the central test set.
//
// The QMNIST class column is checked against the MNIST labels, so misaligned
// or wrong files fail loudly. r drives the held-out split and the client
// subset.
func NewWriterFederated(train, test *Dataset, opt WriterOptions, r *rand.Rand) (*Federated, error) {
	qtrain, qtest, err := LoadQMNISTWriters(opt.QMNISTDir)
	if err != nil {
		return nil, err
	}
	if train.Len() != len(qtrain.Writer) || test.Len() != len(qtest.Writer) {
		return nil, fmt.Errorf("datasets: QMNIST has %d train and %d aligned test rows for %d and %d MNIST images",
			len(qtrain.Writer), len(qtest.Writer), train.Len(), test.Len())
	}
	pool := &Dataset{X: slices.Concat(train.X, test.X), Y: slices.Concat(train.Y, test.Y), Dim: train.Dim, Classes: train.Classes}
	if train.Dim != test.Dim || train.Classes != test.Classes {
		return nil, fmt.Errorf("datasets: train and test differ in shape (%d/%d vs %d/%d)", train.Dim, train.Classes, test.Dim, test.Classes)
	}
	writers := slices.Concat(qtrain.Writer, qtest.Writer)
	for i, c := range slices.Concat(qtrain.Class, qtest.Class) {
		if c != pool.Y[i] {
			return nil, fmt.Errorf("datasets: QMNIST class %d differs from MNIST label %d at pooled example %d: the label files do not align with MNIST", c, pool.Y[i], i)
		}
	}
	frac := opt.TestFraction
	if frac == 0 {
		frac = 0.1
	}
	ids, parts, held, err := PartitionWriters(writers, frac, r)
	if err != nil {
		return nil, err
	}
	if n := opt.Clients; n > 0 {
		if n > len(ids) {
			return nil, fmt.Errorf("datasets: %d clients asked for but MNIST has %d writers", n, len(ids))
		}
		keep := r.Perm(len(ids))[:n]
		slices.Sort(keep)
		var p2, h2 [][]int
		var i2 []int32
		for _, k := range keep {
			p2, h2, i2 = append(p2, parts[k]), append(h2, held[k]), append(i2, ids[k])
		}
		parts, held, ids = p2, h2, i2
	}
	users := make([]string, len(ids))
	for c, w := range ids {
		users[c] = strconv.Itoa(int(w))
	}
	var heldAll []int
	clientTest := make([][]int, len(held))
	for c, h := range held {
		for range h {
			clientTest[c] = append(clientTest[c], len(heldAll))
			heldAll = append(heldAll, h[len(clientTest[c])-1])
		}
	}
	f := &Federated{Name: "mnist-writers", Train: pool, Clients: parts, Test: pool.Subset(heldAll), ClientTest: clientTest, Users: users}
	return f, f.Validate()
}
