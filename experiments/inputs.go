package experiments

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"dpfl/results/regular"
)

// Inputs are the fingerprints of the files a run reads, keyed by the
// configuration key that names them (participation.availability.file,
// data.path, data.changelogs, data.qmnist_dir, data.dir, model.init). They are part of
// the run's identity (RunID): editing a trace or a corpus gives a new run,
// so a resumed or skipped run is always one whose epsilon and results belong
// to the files it really used. MNIST from the pinned GoMNIST module is not
// listed (go.sum fixes its content).
type Inputs map[string]string

// Changed lists the keys whose fingerprints differ between in and other, in
// sorted order.
func (in Inputs) Changed(other Inputs) []string {
	var keys []string
	for k, v := range in {
		if other[k] != v {
			keys = append(keys, k)
		}
	}
	for k := range other {
		if _, ok := in[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// fingerprinter hashes input files, remembering the hash of each file list
// it has seen (a grid's points share their data files).
type fingerprinter map[string]string

// Fingerprint returns the fingerprints of the files cfg reads, with relative
// names resolved against opts.BaseDir and default folders from opts.Data. An
// unreadable input is an error naming its key.
func Fingerprint(cfg *Config, opts Options) (Inputs, error) {
	return FingerprintContext(context.Background(), cfg, opts)
}

// FingerprintContext is Fingerprint stopping with ctx's error once ctx is
// done (hashing a large file takes a while).
func FingerprintContext(ctx context.Context, cfg *Config, opts Options) (Inputs, error) {
	return fingerprinter{}.inputsContext(ctx, cfg, opts)
}

func (fp fingerprinter) inputs(cfg *Config, opts Options) (Inputs, error) {
	return fp.inputsContext(context.Background(), cfg, opts)
}

func (fp fingerprinter) inputsContext(ctx context.Context, cfg *Config, opts Options) (Inputs, error) {
	baseDir := opts.BaseDir
	in := Inputs{}
	add := func(key, root string, files []string, err error) error {
		if err == nil {
			var h string
			if h, err = fp.hash(ctx, root, files); err == nil {
				in[key] = h
				return nil
			}
		}
		return fmt.Errorf("experiments: %s: %w", key, err)
	}
	data, err := cfg.Data.Resolved(baseDir).Inputs(opts.data())
	if err != nil {
		return nil, dataError(err)
	}
	for _, d := range data {
		if d.Fingerprint != "" {
			in["data."+d.Key] = d.Fingerprint
			continue
		}
		if err := add("data."+d.Key, d.Root, d.Files, nil); err != nil {
			return nil, err
		}
	}
	if a := cfg.Participation.Availability; readsFile(a) {
		path := resolve(baseDir, a.File)
		if err := add("participation.availability.file", path, []string{path}, nil); err != nil {
			return nil, err
		}
	}
	if cfg.Model.Init != "" {
		path := resolve(baseDir, cfg.Model.Init)
		if err := add("model.init", path, []string{path}, nil); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// hash is "sha256:" and the hex SHA-256 over each file's name (relative to
// root; the base name when root is ""; nothing for a lone file given as
// root), length and content, in the order given.
func (fp fingerprinter) hash(ctx context.Context, root string, files []string) (string, error) {
	memo := root + "\x00" + strings.Join(files, "\x00")
	if h, ok := fp[memo]; ok {
		return h, nil
	}
	h := sha256.New()
	for _, p := range files {
		name := filepath.Base(p)
		if root != "" {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return "", err
			}
			name = filepath.ToSlash(rel)
		}
		// A device (/dev/zero) would be read for ever, and a FIFO would
		// block the open itself: both are refused before reading.
		f, _, err := regular.Open(p)
		if err != nil {
			return "", err
		}
		st, err := f.Stat()
		if err == nil {
			io.WriteString(h, name+"\x00")
			binary.Write(h, binary.LittleEndian, st.Size())
			var n int64
			n, err = io.Copy(h, regular.Reader(ctx, f))
			if err == nil && n != st.Size() {
				err = fmt.Errorf("%s changed while being read", p)
			}
		}
		f.Close()
		if err != nil {
			return "", err
		}
	}
	s := "sha256:" + hex.EncodeToString(h.Sum(nil))
	fp[memo] = s
	return s, nil
}
