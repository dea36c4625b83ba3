package experiments

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestAuditExplore(t *testing.T) {
	if os.Getenv("AUDIT_EXPLORE") == "" {
		t.Skip()
	}
	for _, agg := range []string{"dpfedavg", "bandmf\n  bands: 5", "tree"} {
		for _, under := range []float64{0, 0.5} {
			yml := fmt.Sprintf(`name: audit
seed: 3
rounds: 50
data:
  dataset: mnist
  clients: 1000
model:
  kind: logreg
client:
  batch_size: 10
  lr: 0.1
participation:
  kind: single
  cohort: 40
aggregator:
  kind: %s
  clip: 1
privacy:
  epsilon: 4
  delta: 1.0e-5
server:
  lr: 1
eval:
  every: 50
audit:
  canaries: 1000
  observe: rounds
`, agg)
			cfg, _, err := Load([]byte(yml), "t.yaml")
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			p, err := NewPlan(context.Background(), cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			p.underNoise = under
			out, err := p.Run(context.Background(), Options{OutDir: t.TempDir(), Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(filepath.Join(out.Dir, AuditFile))
			var a AuditRecord
			json.Unmarshal(b, &a)
			fmt.Printf("%q under=%g acc=%.3f eps=%.3f sigma=%.3f %v\n", agg, under, out.Summary.FinalAccuracy, *out.Summary.Epsilon, out.Summary.NoiseMultiplier, time.Since(start))
			for _, e := range a.Estimates {
				fmt.Printf("  %s eps %.3f [%.3f, %.3f] mu %.3f in %+v out %+v n=%d/%d\n", e.ThreatModel, e.Epsilon, e.Low, e.High, e.Mu, e.InsertedFit, e.HeldOutFit, len(e.InsertedStats), len(e.HeldOutStats))
			}
		}
	}
}
