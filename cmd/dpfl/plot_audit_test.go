package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dpfl plot RUN_DIR draws a run's canary histograms; -o is refused there,
// and a folder with neither audit.json nor index.csv is an error naming it.
func TestPlotAuditRunDir(t *testing.T) {
	dir := t.TempDir()
	stats := "[0.1, -0.2, 0.05, 0.3, -0.1, 0.0, 0.2]"
	audit := `{"delta": 1e-5, "reported_epsilon": null, "accountant": "none (no noise)", "estimates": [
	  {"threat_model": "every-round", "epsilon": "inf", "epsilon_low": 40, "epsilon_high": "inf", "inserted_statistics": [1, 1.1, 0.9, 1.2], "held_out_statistics": ` + stats + `},
	  {"threat_model": "final-model", "epsilon": 2, "epsilon_low": 1, "epsilon_high": 3, "inserted_statistics": ` + stats + `, "held_out_statistics": ` + stats + `}]}`
	if err := os.WriteFile(filepath.Join(dir, "audit.json"), []byte(audit), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"plot", dir}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, f := range []string{"audit_every-round.png", "audit_final-model.png"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("output %q does not list %s", out.String(), f)
		}
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	errb.Reset()
	if code := run(context.Background(), []string{"plot", "-o", filepath.Join(dir, "x.png"), dir}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "-o") {
		t.Errorf("-o on a run folder: exit %d, %q", code, errb.String())
	}
	errb.Reset()
	if code := run(context.Background(), []string{"plot", t.TempDir()}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "index.csv") {
		t.Errorf("empty folder: exit %d, %q", code, errb.String())
	}
}
