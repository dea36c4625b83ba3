package figures

import (
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"dpfl/results"
)

// AuditFile is the empirical privacy record of a run with canaries (written
// by package experiments; only the fields drawn are read here).
const AuditFile = "audit.json"

// auditRecord is the part of audit.json the histograms need.
type auditRecord struct {
	Delta           float64  `json:"delta"`
	ReportedEpsilon *float64 `json:"reported_epsilon"`
	Accountant      string   `json:"accountant"`
	Estimates       []struct {
		ThreatModel string        `json:"threat_model"`
		Epsilon     results.Float `json:"epsilon"`
		Low         results.Float `json:"epsilon_low"`
		High        results.Float `json:"epsilon_high"`
		OneRun      *struct {
			Epsilon results.Float `json:"epsilon_lower_bound"`
		} `json:"one_run"`
		Inserted []float64 `json:"inserted_statistics"`
		HeldOut  []float64 `json:"held_out_statistics"`
	} `json:"estimates"`
}

// HasAudit reports whether dir is a run folder with an audit.json.
func HasAudit(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, AuditFile))
	return err == nil
}

// AuditFigureName is the file name of a threat model's histogram
// ("final-model" → audit_final-model.png; also written as .pdf).
func AuditFigureName(threat string) string { return "audit_" + threat + ".png" }

// WriteAudit draws, for each threat model of dir/audit.json, the histograms
// of the inserted and the held-out canaries' statistics (normalized to unit
// area, on common bins) into dir/audit_THREAT.png (300 dpi) and .pdf, with
// the estimate, its interval and the reported epsilon in the title; it
// returns the paths.
func WriteAudit(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, AuditFile))
	if err != nil {
		return nil, fmt.Errorf("figures: %w", err)
	}
	var rec auditRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("figures: %s: %w", filepath.Join(dir, AuditFile), err)
	}
	if len(rec.Estimates) == 0 {
		return nil, fmt.Errorf("figures: %s has no estimates", filepath.Join(dir, AuditFile))
	}
	var paths []string
	for _, e := range rec.Estimates {
		path := filepath.Join(dir, AuditFigureName(e.ThreatModel))
		reported := "none (no noise)"
		if rec.ReportedEpsilon != nil {
			reported = fmt.Sprintf("%.3g (%s)", *rec.ReportedEpsilon, rec.Accountant)
		}
		title := fmt.Sprintf("canary statistics, %s: empirical ε %s [%s, %s] at δ = %g; reported ε %s",
			e.ThreatModel, fmtEps(e.Epsilon), fmtEps(e.Low), fmtEps(e.High), rec.Delta, reported)
		if e.OneRun != nil {
			title += fmt.Sprintf("; one-run lower bound %s (95%%)", fmtEps(e.OneRun.Epsilon))
		}
		f, err := plotHistograms(title, e.ThreatModel, e.Inserted, e.HeldOut)
		if err != nil {
			return nil, err
		}
		ps, err := f.saveBoth(strings.TrimSuffix(path, ".png"))
		if err != nil {
			return nil, err
		}
		paths = append(paths, ps...)
	}
	return paths, nil
}

func fmtEps(f results.Float) string {
	x := float64(f)
	if math.IsInf(x, 1) {
		return "∞"
	}
	return fmt.Sprintf("%.3g", x)
}

// plotHistograms draws the two groups' normalized histograms on common
// bins, in the figures' style (palette, fonts, the title wrapped to the
// width).
func plotHistograms(title, threat string, inserted, heldOut []float64) (figure, error) {
	if len(inserted) == 0 || len(heldOut) == 0 {
		return figure{}, errors.New("figures: audit: a group of canaries has no statistics")
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, xs := range [][]float64{inserted, heldOut} {
		for _, x := range xs {
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
	}
	if !(hi > lo) {
		hi = lo + 1e-12
	}
	bins := int(math.Max(10, math.Min(60, math.Sqrt(float64(len(inserted)+len(heldOut))))))
	width := (hi - lo) / float64(bins)
	hist := func(xs []float64) plotter.XYs {
		counts := make([]float64, bins)
		for _, x := range xs {
			i := min(bins-1, int((x-lo)/width))
			counts[i]++
		}
		// A step outline: each bin's density at both of its edges.
		var pts plotter.XYs
		for i, c := range counts {
			d := c / (float64(len(xs)) * width)
			x0 := lo + float64(i)*width
			pts = append(pts, plotter.XY{X: x0, Y: d}, plotter.XY{X: x0 + width, Y: d})
		}
		return pts
	}
	w, h := 6*vg.Inch, 3.5*vg.Inch
	p := paperPlot(strings.Join(wrap(textStyle(titleSize), title, w-2*margin), "\n"), "statistic ("+threat+")", "density")
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(labelSize)
	for _, g := range []struct {
		name string
		xs   []float64
		col  color.RGBA
	}{
		{fmt.Sprintf("held out (%d)", len(heldOut)), heldOut, okabeIto[0]},
		{fmt.Sprintf("inserted (%d)", len(inserted)), inserted, okabeIto[1]},
	} {
		l, err := plotter.NewLine(hist(g.xs))
		if err != nil {
			return figure{}, fmt.Errorf("figures: %w", err)
		}
		l.Color = g.col
		l.Width = vg.Points(1.5)
		l.FillColor = color.NRGBA{R: g.col.R, G: g.col.G, B: g.col.B, A: 70}
		p.Add(l)
		p.Legend.Add(g.name, l)
	}
	p.Y.Min, p.Y.Max = 0, 1.2*p.Y.Max // room for the legend above the bars
	return figure{w, h, p.Draw}, nil
}
