package figures

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"dpfl/results"
)

// Figures written by WriteRun into a run folder, each as NAME.png (300 dpi)
// and NAME.pdf.
const (
	RunCurveFigure         = "run_learning_curve"
	RunEpsilonFigure       = "run_epsilon"
	RunParticipationFigure = "run_participation"
)

// IsRun reports whether dir is a run folder (it has a metrics.csv).
func IsRun(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "metrics.csv"))
	return err == nil
}

// runMetrics is metrics.csv's columns, by header name, as numbers (NaN for
// an empty cell), and the epsilon column's description (accountant, delta,
// adjacency, epsilon_scope) from its first row.
type runMetrics struct {
	header []string
	cols   map[string][]float64
	info   map[string]string
}

func readRunMetrics(dir string) (*runMetrics, error) {
	path := filepath.Join(dir, "metrics.csv")
	t, err := results.ReadMetricsTable(path)
	if err != nil {
		return nil, fmt.Errorf("figures: %w", err)
	}
	if len(t.Rows) == 0 {
		return nil, fmt.Errorf("figures: %s has no rounds", path)
	}
	m := &runMetrics{header: t.Header, cols: map[string][]float64{}, info: map[string]string{}}
	for i := range t.Rows {
		for _, h := range t.Header {
			v := math.NaN()
			if c := t.Get(i, h); c != "" {
				if x, err := strconv.ParseFloat(c, 64); err == nil {
					v = x
				}
			}
			m.cols[h] = append(m.cols[h], v)
		}
	}
	for _, h := range []string{"accountant", "delta", "adjacency", "epsilon_scope"} {
		m.info[h] = t.Get(0, h)
	}
	return m, nil
}

// xy pairs round with column col, skipping missing and non-finite values.
func (m *runMetrics) xy(col string) plotter.XYs {
	var pts plotter.XYs
	for i, r := range m.cols["round"] {
		if v := m.cols[col][i]; !math.IsNaN(v) && !math.IsInf(v, 0) && !math.IsNaN(r) {
			pts = append(pts, plotter.XY{X: r, Y: v})
		}
	}
	return pts
}

// epsilonColumn returns metrics.csv's ε column and its label: the
// accountant, δ, adjacency and scope from the columns naming them, else
// (a file written before the columns named the accountant) from
// summary.json.
func (m *runMetrics) epsilonColumn(dir string) (string, string) {
	acc, delta := m.info["accountant"], m.info["delta"]
	if acc == "" {
		var s struct {
			Method string   `json:"epsilon_method"`
			Delta  *float64 `json:"delta"`
		}
		if b, err := os.ReadFile(filepath.Join(dir, "summary.json")); err == nil && json.Unmarshal(b, &s) == nil && s.Method != "" {
			acc = s.Method
			if s.Delta != nil {
				delta = strconv.FormatFloat(*s.Delta, 'g', -1, 64)
			}
		}
	}
	var lab []string
	for _, p := range []string{acc, delta, m.info["adjacency"], m.info["epsilon_scope"]} {
		switch {
		case p == "" || p == results.ScopeThroughRound:
		case p == delta:
			lab = append(lab, "δ = "+p)
		default:
			lab = append(lab, strings.ReplaceAll(p, "_", " "))
		}
	}
	if len(lab) == 0 {
		return "epsilon", "ε"
	}
	return "epsilon", "ε (" + strings.Join(lab, ", ") + ")"
}

// WriteRun draws a run folder's figures: the learning curve (test accuracy
// and loss against round), ε against round when metrics.csv has it, the
// histogram of participations per client when participation.json is
// present, and a run with canaries' audit histograms. Each figure is
// written atomically as a 300 dpi PNG and a PDF; it returns the paths.
func WriteRun(dir string) ([]string, error) {
	m, err := readRunMetrics(dir)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(filepath.Clean(dir))
	var paths []string
	save := func(base string, w, h vg.Length, drawFn func(draw.Canvas)) error {
		ps, err := figure{w, h, drawFn}.saveBoth(filepath.Join(dir, base))
		paths = append(paths, ps...)
		return err
	}
	curve, err := learningCurve(m, name)
	if err != nil {
		return nil, err
	}
	if err := save(RunCurveFigure, 6*vg.Inch, 5*vg.Inch, curve); err != nil {
		return nil, err
	}
	if col, lab := m.epsilonColumn(dir); col != "" && len(m.xy(col)) > 0 {
		p := linePlot("privacy spent, "+name, "round", lab)
		if err := addSeries(p, m.xy(col), 0, ""); err != nil {
			return nil, err
		}
		p.Y.Min = 0 // ε from none spent, with room above the last marker
		padY(p, 0, 0.05, 0, math.Inf(1))
		if err := save(RunEpsilonFigure, 6*vg.Inch, 3.5*vg.Inch, p.Draw); err != nil {
			return nil, err
		}
	}
	p, err := participationPlot(dir, name)
	if err != nil {
		return nil, err
	}
	if p != nil {
		if err := save(RunParticipationFigure, 6*vg.Inch, 3.5*vg.Inch, p.Draw); err != nil {
			return nil, err
		}
	}
	if HasAudit(dir) {
		ps, err := WriteAudit(dir)
		if err != nil {
			return nil, err
		}
		paths = append(paths, ps...)
	}
	return paths, nil
}

// linePlot is an empty plot with a grid and the given labels.
func linePlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	return p
}

// addSeries adds a line with markers in palette colour i and a distinct
// glyph; a non-empty name goes into the legend.
func addSeries(p *plot.Plot, pts plotter.XYs, i int, name string) error {
	l, s, err := plotter.NewLinePoints(pts)
	if err != nil {
		return fmt.Errorf("figures: %w", err)
	}
	st := styleOf(i)
	l.Color, l.Width = st.color, vg.Points(1.5)
	s.Color, s.Shape, s.Radius = st.color, st.glyph, vg.Points(2.5)
	if len(pts) > 60 {
		s.Radius = vg.Points(1.2)
	}
	p.Add(l, s)
	if name != "" {
		p.Legend.Add(name, l, s)
	}
	return nil
}

// learningCurve draws test accuracy above test loss, on a shared round axis
// (train loss beside test loss when metrics.csv has it).
func learningCurve(m *runMetrics, name string) (func(draw.Canvas), error) {
	acc := linePlot("learning curve, "+name, "", "test accuracy")
	loss := linePlot("", "round", "loss")
	var errs []error
	errs = append(errs, addSeries(acc, m.xy("test_accuracy"), 0, ""))
	if pts := m.xy("train_loss"); len(pts) > 0 {
		errs = append(errs, addSeries(loss, pts, 1, "train loss"))
	}
	errs = append(errs, addSeries(loss, m.xy("test_loss"), 0, "test loss"))
	loss.Legend.Top = true
	padY(acc, 0, 0.05, 0, 1)
	padY(loss, 0, 0.25, 0, math.Inf(1)) // room for the legend at the top
	// A shared x range, with room for the end markers.
	lo, hi := math.Min(acc.X.Min, loss.X.Min), math.Max(acc.X.Max, loss.X.Max)
	pad := 0.02 * math.Max(hi-lo, 1)
	for _, p := range []*plot.Plot{acc, loss} {
		p.X.Min, p.X.Max = lo-pad, hi+pad
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return func(c draw.Canvas) {
		plots := [][]*plot.Plot{{acc}, {loss}}
		tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(6), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
		cs := plot.Align(plots, tiles, c)
		for i := range plots {
			plots[i][0].Draw(cs[i][0])
		}
	}, nil
}

// padY widens p's y range by the fractions below and above of its span
// (of 5% of the value for a flat curve, whose ticks would otherwise all
// read the same), within [lo, hi].
func padY(p *plot.Plot, below, above, lo, hi float64) {
	span := p.Y.Max - p.Y.Min
	if span < 0.01*math.Abs(p.Y.Max) || span == 0 {
		mid := (p.Y.Max + p.Y.Min) / 2
		half := math.Max(0.05*math.Abs(mid), 0.01)
		p.Y.Min, p.Y.Max, span = mid-half, mid+half, 2*half
	}
	p.Y.Min = math.Max(lo, p.Y.Min-below*span)
	p.Y.Max = math.Min(hi, p.Y.Max+above*span)
}

// participationPlot draws the number of clients against their number of
// participations from participation.json's histogram; nil without the file.
func participationPlot(dir, name string) (*plot.Plot, error) {
	path := filepath.Join(dir, "participation.json")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("figures: %w", err)
	}
	var rec struct {
		Histogram []float64 `json:"Histogram"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("figures: %s: %w", path, err)
	}
	if len(rec.Histogram) == 0 {
		return nil, nil
	}
	p := linePlot("participations per client, "+name, "participations in the run", "clients")
	bars, err := plotter.NewBarChart(plotter.Values(rec.Histogram), vg.Points(max(2, 300/float64(len(rec.Histogram)))))
	if err != nil {
		return nil, fmt.Errorf("figures: %w", err)
	}
	bars.Color = okabeIto[0]
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalX(participationTicks(len(rec.Histogram))...)
	// Room for the outer bars' halves and above the tallest bar.
	p.X.Min, p.X.Max = -0.6, float64(len(rec.Histogram))-0.4
	p.Y.Min, p.Y.Max = 0, 1.06*p.Y.Max
	return p, nil
}

// participationTicks labels every bar for few bars, else about ten.
func participationTicks(n int) []string {
	step := max(1, n/10)
	ts := make([]string, n)
	for i := range ts {
		if i%step == 0 {
			ts[i] = strconv.Itoa(i)
		}
	}
	return ts
}
