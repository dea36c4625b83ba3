//go:build unix

package results

import (
	"path/filepath"
	"syscall"
	"testing"
)

// extraSpecialFiles returns a FIFO no one writes to: opening it for reading
// blocks.
func extraSpecialFiles(t *testing.T) []string {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Logf("no FIFO: %v", err)
		return nil
	}
	return []string{p}
}
