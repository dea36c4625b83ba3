//go:build unix

package regular

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

func TestOpenAndReadMax(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, size, err := Open(p)
	if err != nil || size != 5 {
		t.Fatalf("Open = %v, %d, want size 5", err, size)
	}
	f.Close()
	if b, err := ReadMax(p, 5); err != nil || string(b) != "hello" {
		t.Fatalf("ReadMax(5) = %q, %v", b, err)
	}
	if _, err := ReadMax(p, 4); err == nil || !strings.Contains(err.Error(), "more than the 4") {
		t.Fatalf("ReadMax(4) = %v, want a refusal naming the bound", err)
	}
	if _, _, err := Open(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Fatalf("missing file: %v, want IsNotExist", err)
	}
	if err := Check(dir); err == nil || !strings.Contains(err.Error(), "a folder") {
		t.Fatalf("Check(folder) = %v", err)
	}
}

// TestSpecialFilesRefusedWithoutBlocking: a FIFO nobody writes to (opening it
// for reading would block) and /dev/zero (reading it never ends) are refused
// at once, naming what they are.
func TestSpecialFilesRefusedWithoutBlocking(t *testing.T) {
	want := map[string]string{}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err == nil {
		want[fifo] = "a named pipe"
	}
	if runtime.GOOS == "linux" {
		want["/dev/zero"] = "a device"
	}
	if len(want) == 0 {
		t.Skip("no FIFO or /dev/zero here")
	}
	for p, kind := range want {
		if _, _, err := Open(p); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), kind) {
			t.Errorf("Open(%s) = %v, want %q", p, err, kind)
		}
		if _, err := ReadMax(p, 1<<20); err == nil {
			t.Errorf("ReadMax(%s) accepted it", p)
		}
	}
}

// TestReaderStopsOnCancel: the wrapped reader reads until the context is
// cancelled and then fails with the context's error.
func TestReaderStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := Reader(ctx, strings.NewReader(strings.Repeat("x", 100)))
	buf := make([]byte, 10)
	if n, err := r.Read(buf); n != 10 || err != nil {
		t.Fatalf("first read: %d, %v", n, err)
	}
	cancel()
	if _, err := io.ReadAll(r); !errors.Is(err, context.Canceled) {
		t.Fatalf("after cancel: %v, want context.Canceled", err)
	}
}
