// Package filecache keeps the entries of a strategy.Cache as the files of
// a directory (a strategy.Store): one file per key, named by the first 12
// bytes of the key's SHA-256 in hex with the suffix ".strategy", written
// atomically (a temporary file in the directory, synced, then renamed over
// the entry), so that a reader sees a whole entry or none. What an entry
// holds, and the checks of its integrity (checksum, format version, key),
// are package strategy's: this package moves bytes only.
//
// Package filecache imports only the standard library.
package filecache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
)

// Dir is a directory of cache entries, created on the first write. The
// empty Dir keeps nothing: Load finds nothing and Save does nothing.
type Dir string

// File is the path of the file of key.
func (d Dir) File(key string) string {
	h := sha256.Sum256([]byte(key))
	return filepath.Join(string(d), hex.EncodeToString(h[:12])+".strategy")
}

// Load returns the bytes stored under key, and false when there are none
// (or they cannot be read).
func (d Dir) Load(key string) ([]byte, bool) {
	if d == "" {
		return nil, false
	}
	b, err := os.ReadFile(d.File(key))
	if err != nil {
		return nil, false
	}
	return b, true
}

// Save stores data under key atomically; a temporary file left by a
// failed write is removed.
func (d Dir) Save(key string, data []byte) error {
	if d == "" {
		return nil
	}
	if err := os.MkdirAll(string(d), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(string(d), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), d.File(key)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
