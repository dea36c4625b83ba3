package figures

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteAudit draws one histogram per threat model of audit.json, and says
// which file is bad when it cannot.
func TestWriteAudit(t *testing.T) {
	dir := t.TempDir()
	if HasAudit(dir) {
		t.Fatal("HasAudit on an empty folder")
	}
	xs := func(m float64) []float64 {
		v := make([]float64, 200)
		for i := range v {
			v[i] = m + math.Sin(float64(i)) // spread, deterministic
		}
		return v
	}
	rec := map[string]any{
		"delta": 1e-5, "reported_epsilon": 4.0, "accountant": "exact-gdp",
		"estimates": []map[string]any{
			{"threat_model": "every-round", "epsilon": 3.9, "epsilon_low": 3.1, "epsilon_high": 4.5, "inserted_statistics": xs(1), "held_out_statistics": xs(0)},
			{"threat_model": "final-model", "epsilon": "inf", "epsilon_low": 20, "epsilon_high": "inf", "inserted_statistics": xs(9), "held_out_statistics": xs(0)},
		},
	}
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(filepath.Join(dir, AuditFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	paths, err := WriteAudit(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	if want := "audit_every-round.png audit_every-round.pdf audit_final-model.png audit_final-model.pdf"; strings.Join(names, " ") != want {
		t.Fatalf("paths %v, want %s", names, want)
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || st.Size() < 1000 {
			t.Errorf("%s: %v", p, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, AuditFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteAudit(dir); err == nil || !strings.Contains(err.Error(), AuditFile) {
		t.Errorf("bad audit.json: error %v, want one naming it", err)
	}
}
