//go:build !mpi

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRunMPIWithoutTag: dpfl run -mpi in the default (pure Go) build fails
// with one line saying how to build with MPI, and writes nothing.
func TestRunMPIWithoutTag(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI("run", "-mpi", "-quiet", "-out", out, filepath.Join("..", "..", "experiments", "quickstart.yaml"))
	if code != exitFailure || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "-tags mpi") {
		t.Fatalf("exit %d, stdout %q, stderr %q: want exit 1 and one line naming -tags mpi", code, stdout, stderr)
	}
	if m, _ := filepath.Glob(filepath.Join(out, "*")); len(m) != 0 {
		t.Fatalf("dpfl run -mpi without MPI wrote %v", m)
	}
}
