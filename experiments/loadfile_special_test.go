package experiments

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestLoadFileRefusesSpecialFiles: a configuration or grid path that names a
// FIFO or a device is refused at once with a line naming it (before, the
// read blocked on the FIFO for ever and read /dev/zero until out of memory).
func TestLoadFileRefusesSpecialFiles(t *testing.T) {
	paths := map[string]string{}
	fifo := filepath.Join(t.TempDir(), "c.yaml")
	if err := mkfifo(fifo); err == nil {
		paths[fifo] = "named pipe"
	} else {
		t.Logf("no FIFO here: %v", err)
	}
	if runtime.GOOS == "linux" {
		paths["/dev/zero"] = "device"
	}
	if len(paths) == 0 {
		t.Skip("neither a FIFO nor /dev/zero on this system")
	}
	for p, kind := range paths {
		for name, load := range map[string]func(string) error{
			"LoadFile": func(p string) error { _, _, err := LoadFile(p); return err },
			"LoadGrid": func(p string) error { _, err := LoadGrid(p); return err },
		} {
			done := make(chan error, 1)
			go func() { done <- load(p) }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), kind) {
					t.Errorf("%s(%s) = %v, want an error naming the path and %q", name, p, err, kind)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s(%s) did not return within 5 s", name, p)
			}
		}
	}
}
