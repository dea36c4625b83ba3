package filecache

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestDir: an entry saved is loaded back whole, replaced by a later save,
// named by its key's hash (the names caches written before keep), and
// leaves no temporary file; a missing key, the empty Dir and an unwritable
// directory (a file in its way) load nothing, the last with an error on
// save.
func TestDir(t *testing.T) {
	d := Dir(filepath.Join(t.TempDir(), "cache"))
	if _, ok := d.Load("k"); ok {
		t.Fatal("loaded a key never saved")
	}
	for _, data := range [][]byte{[]byte("first"), []byte("second, longer")} {
		if err := d.Save("k", data); err != nil {
			t.Fatal(err)
		}
		if got, ok := d.Load("k"); !ok || !bytes.Equal(got, data) {
			t.Fatalf("loaded %q, %v; want %q", got, ok, data)
		}
	}
	h := sha256.Sum256([]byte("k"))
	if want := filepath.Join(string(d), fmt.Sprintf("%x.strategy", h[:12])); d.File("k") != want {
		t.Errorf("File = %s, want %s", d.File("k"), want)
	}
	if tmp, _ := filepath.Glob(filepath.Join(string(d), ".tmp-*")); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
	if err := Dir("").Save("k", []byte("x")); err != nil {
		t.Error(err)
	}
	if _, ok := Dir("").Load("k"); ok {
		t.Error("the empty Dir loaded an entry")
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Dir(filepath.Join(file, "sub")).Save("k", []byte("x")); err == nil {
		t.Error("saved under a file")
	}
}
