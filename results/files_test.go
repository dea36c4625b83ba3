package results

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// returnsWithin fails the test unless f returns within d (a read blocked on
// a FIFO never would).
func returnsWithin(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// sparseFile writes b at the start of a file of size bytes (a sparse file:
// it takes no disk space), or skips the test where the file system cannot.
func sparseFile(t *testing.T, b []byte, size int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), ModelFile)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Skipf("no sparse file of %d bytes here: %v", size, err)
	}
	return path
}

// TestReadSafetensorsHugeFile: a 10 GB (sparse) model file is refused from
// its header and size, reading and allocating next to nothing: a valid
// header followed by 10 GB of zeros, and a header whose tensor claims the
// 10 GB (OpenSafetensors accepts the file as it is consistent, and a caller
// sees the tensor's size before reading it).
func TestReadSafetensorsHugeFile(t *testing.T) {
	good, _ := EncodeSafetensors([]Tensor{{Name: "W0", Shape: []int{2}, Data: []float32{1, 2}}}, nil)
	path := sparseFile(t, good, 10<<30)
	var err error
	if got := allocated(func() { _, _, err = ReadSafetensors(path) }); got > 1<<20 {
		t.Fatalf("reading a 10 GB file allocated %d bytes", got)
	}
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "data bytes after the last tensor") {
		t.Fatalf("10 GB after a valid header: %v", err)
	}
	claims := rawSafetensors(`{"W0":{"dtype":"F32","shape":[2684354560],"data_offsets":[0,10737418240]}}`, nil)
	path = sparseFile(t, claims, int64(len(claims))+10<<30)
	var st *Safetensors
	if got := allocated(func() { st, err = OpenSafetensors(path) }); got > 1<<20 || err != nil {
		t.Fatalf("opening a consistent 10 GB file: %v, allocated %d bytes", err, got)
	}
	defer st.Close()
	if len(st.Tensors) != 1 || st.Tensors[0].Name != "W0" || st.Tensors[0].Len() != 2684354560 {
		t.Fatalf("tensors %+v", st.Tensors)
	}
}

// TestReadersRefuseSpecialFiles: every reader of a run's files refuses a
// device, a folder and (on Unix, see files_unix_test.go) a FIFO at once,
// naming the path, where reading /dev/zero would never end and opening a
// FIFO would wait for a writer.
func TestReadersRefuseSpecialFiles(t *testing.T) {
	paths := []string{t.TempDir()}
	if _, err := os.Stat(os.DevNull); err == nil {
		paths = append(paths, os.DevNull)
	}
	if st, err := os.Stat("/dev/zero"); err == nil && st.Mode()&os.ModeDevice != 0 {
		paths = append(paths, "/dev/zero")
	}
	paths = append(paths, extraSpecialFiles(t)...)
	for _, p := range paths {
		var err error
		returnsWithin(t, 5*time.Second, "ReadSafetensors("+p+")", func() { _, _, err = ReadSafetensors(p) })
		if err == nil || !strings.Contains(err.Error(), p+" is not a regular file") {
			t.Errorf("%s: %v", p, err)
		}
		for name, read := range map[string]func() error{
			"ReadFileMax":    func() error { _, err := ReadFileMax(p, 1<<20); return err },
			"ReadSummary":    func() error { _, err := ReadSummary(p); return err },
			"ReadMetrics":    func() error { _, err := ReadMetrics(p); return err },
			"ReadCheckpoint": func() error { _, err := ReadCheckpoint(p); return err },
			"ReadTable":      func() error { _, err := ReadTable(p); return err },
		} {
			returnsWithin(t, 5*time.Second, name+"("+p+")", func() { err = read() })
			if err == nil || !strings.Contains(err.Error(), p+" is not a regular file") {
				t.Errorf("%s(%s): %v", name, p, err)
			}
		}
	}
	// A missing file stays recognizable as missing.
	if _, err := ReadFileMax(filepath.Join(t.TempDir(), "none"), 10); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
	zeros := filepath.Join(t.TempDir(), "metrics.csv")
	os.WriteFile(zeros, make([]byte, 1<<20), 0o644)
	if _, err := ReadMetrics(zeros); err == nil || !strings.Contains(err.Error(), "line 1: bufio.Scanner: token too long") {
		t.Errorf("a metrics.csv of 1 MB of zeros: %v", err)
	}
	big := filepath.Join(t.TempDir(), "big")
	os.WriteFile(big, binary.LittleEndian.AppendUint64(nil, 1), 0o644)
	if _, err := ReadFileMax(big, 4); err == nil || !strings.Contains(err.Error(), "has 8 bytes, more than the 4") {
		t.Errorf("over the limit: %v", err)
	}
}
