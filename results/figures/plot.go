package figures

import (
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"dpfl/results"
)

// Files written by Write into a results folder.
const (
	EpsilonFigure = "accuracy_vs_epsilon.png"
	RoundFigure   = "accuracy_vs_round.png"
	BestTable     = "best.csv"
	ReportFile    = "report.html"
)

// Write summarizes dir's grid and writes the figures, best.csv,
// report.html and comparisons.csv into it; it returns the paths written.
func Write(dir string, o Options) ([]string, error) {
	s, err := Summarize(dir, o)
	if err != nil {
		return nil, err
	}
	paths := []string{filepath.Join(dir, EpsilonFigure), filepath.Join(dir, RoundFigure), filepath.Join(dir, BestTable), filepath.Join(dir, ReportFile)}
	if err := s.PlotX(paths[0]); err != nil {
		return nil, err
	}
	if err := s.PlotRounds(dir, paths[1]); err != nil {
		return nil, err
	}
	if err := s.WriteBest(paths[2]); err != nil {
		return nil, err
	}
	if err := s.Report(dir, paths[3], []string{EpsilonFigure, RoundFigure}); err != nil {
		return nil, err
	}
	cmp := filepath.Join(dir, ComparisonsTable)
	if err := s.WriteComparisons(cmp); err != nil {
		return nil, err
	}
	return append(paths, cmp), nil
}

// errPoints is an XY series with asymmetric Y errors.
type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

// PlotX draws y against x, one line per series with bars of the 95% t
// confidence interval over seeds (none for one seed)
// and each non-private baseline as a dashed horizontal line; the x axis is
// logarithmic when every x is positive. The format follows path's extension
// (.png, .svg, .pdf).
func (s *Summary) PlotX(path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s vs %s (best hyperparameters, mean over seeds, 95%% t interval)", label(s.YCol), s.xTitle())
	p.X.Label.Text = s.xLabel()
	p.Y.Label.Text = s.axisLabel(s.YCol)
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.YPosition = draw.PosBottom
	logX := len(s.Points) > 0
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for _, pt := range s.Points {
		logX = logX && pt.X > 0
		xmin, xmax = min(xmin, pt.X), max(xmax, pt.X)
	}
	var xs []float64
	for _, pt := range s.Points {
		if !slices.Contains(xs, pt.X) {
			xs = append(xs, pt.X)
		}
	}
	p.X.Tick.Marker = valueTicks(xs)
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Min, p.X.Max = xmin/1.15, xmax*1.15 // room for the end markers
	} else if xmax > xmin {
		pad := (xmax - xmin) * 0.04
		p.X.Min, p.X.Max = xmin-pad, xmax+pad
	}
	p.Add(plotter.NewGrid())
	for i, name := range s.Series() {
		var e errPoints
		for _, pt := range s.Points {
			if pt.Series == name && !math.IsInf(pt.Mean, 0) { // diverged (loss +Inf): in best.csv, not drawn
				e.XYs = append(e.XYs, plotter.XY{X: pt.X, Y: pt.Mean})
				lo, hi := pt.Mean-pt.CILow, pt.CIHigh-pt.Mean
				if math.IsNaN(lo) || math.IsNaN(hi) {
					lo, hi = 0, 0 // one seed: no interval
				}
				e.YErrors = append(e.YErrors, struct{ Low, High float64 }{lo, hi})
			}
		}
		col := plotutil.Color(i)
		if len(e.XYs) > 0 {
			l, sc, err := plotter.NewLinePoints(e.XYs)
			if err != nil {
				return err
			}
			l.Color, sc.Color, sc.Shape = col, col, plotutil.Shape(i)
			bars, err := plotter.NewYErrorBars(e)
			if err != nil {
				return err
			}
			bars.Color = col
			p.Add(l, sc, bars)
			p.Legend.Add(name, l, sc)
		}
		for _, b := range s.Baselines {
			if b.Series != name || len(s.Points) == 0 {
				continue
			}
			l, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: b.Mean}, {X: xmax, Y: b.Mean}})
			if err != nil {
				return err
			}
			l.Color, l.Dashes = col, []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(l)
			p.Legend.Add(name+" (no noise)", l)
		}
	}
	return p.Save(7*vg.Inch, 4.5*vg.Inch, path)
}

// PlotRounds draws test accuracy against round for every plotted point's
// chosen runs (mean over seeds), one color per series and one dash pattern
// per x value.
func (s *Summary) PlotRounds(dir, path string) error {
	p := plot.New()
	p.Title.Text = "test accuracy vs round (best hyperparameters, mean over seeds)"
	p.X.Label.Text = "round"
	p.Y.Label.Text = "test accuracy"
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.YPosition = draw.PosBottom
	p.Add(plotter.NewGrid())
	series := s.Series()
	var xs []float64
	for _, pt := range s.Points {
		if !slices.Contains(xs, pt.X) {
			xs = append(xs, pt.X)
		}
	}
	for _, pt := range append(append([]Point{}, s.Points...), s.Baselines...) {
		curve, err := meanCurve(dir, pt.Dirs)
		if err != nil {
			return err
		}
		if len(curve) == 0 {
			continue
		}
		l, err := plotter.NewLine(curve)
		if err != nil {
			return err
		}
		si := slices.Index(series, pt.Series)
		l.Color = plotutil.Color(si)
		xi := slices.Index(xs, pt.X)
		if xi < 0 {
			xi = len(xs) // the baseline
		}
		l.Dashes = plotutil.Dashes(xi)
		p.Add(l)
		xl := fmt.Sprintf("%s=%g", shortLabel(s.XCol), pt.X)
		if math.IsInf(pt.X, 1) {
			xl = "no noise"
		}
		p.Legend.Add(pt.Series+", "+xl, l)
	}
	return p.Save(7*vg.Inch, 5*vg.Inch, path)
}

// meanCurve averages test_accuracy by round over the runs' metrics.csv.
func meanCurve(dir string, dirs []string) (plotter.XYs, error) {
	var sum plotter.XYs
	n := 0
	for _, d := range dirs {
		rows, err := results.ReadMetrics(filepath.Join(dir, d, "metrics.csv"))
		if err != nil {
			return nil, err
		}
		if n == 0 {
			for _, r := range rows {
				sum = append(sum, plotter.XY{X: float64(r.Round)})
			}
		}
		if len(rows) != len(sum) {
			continue // a different evaluation grid: skip rather than mix
		}
		for i, r := range rows {
			a := r.TestAccuracy
			if math.IsNaN(a) {
				a = 0
			}
			sum[i].Y += a
		}
		n++
	}
	for i := range sum {
		sum[i].Y /= float64(max(n, 1))
	}
	return sum, nil
}

// Report writes a small HTML page: the figures, the best-point table and
// every run's privacy (epsilon with its accountant and delta, sigma,
// sensitivity, participation) and result.
func (s *Summary) Report(dir, path string, figs []string) error {
	var b strings.Builder
	name := filepath.Base(dir)
	esc := html.EscapeString
	fmt.Fprintf(&b, "<!doctype html>\n<meta charset=\"utf-8\">\n<title>%s</title>\n", esc(name))
	b.WriteString("<style>body{font-family:sans-serif;max-width:72em;margin:auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}td:last-child{text-align:left}</style>\n")
	fmt.Fprintf(&b, "<h1>%s</h1>\n", esc(name))
	fmt.Fprintf(&b, "<p>Every ε here is accounted by %s.</p>\n", esc(s.EpsilonNote()))
	for _, f := range figs {
		fmt.Fprintf(&b, "<p><img src=\"%s\" alt=\"%s\" style=\"max-width:100%%\"></p>\n", esc(f), esc(f))
	}
	xh := esc(s.XCol)
	if lab := s.axisLabel(s.XCol); lab != label(s.XCol) {
		xh = esc(s.XCol) + "<br><small>" + esc(s.EpsilonNote()) + "</small>"
	}
	chosenOn := ""
	if s.SelectCol != s.YCol {
		chosenOn = " on " + esc(s.SelectCol)
	}
	fmt.Fprintf(&b, "<h2>Best hyperparameters per point</h2>\n<p>Chosen%s; the interval is the 95%% Student-t interval of the mean over seeds.</p>\n<table>\n<tr><th>%s</th><th>%s</th><th>mean %s</th><th>95%% interval</th><th>min</th><th>max</th><th>seeds</th><th>δ</th><th>accountant</th><th>σ</th><th>sensitivity</th><th>participation</th><th>at an edge</th><th>chosen</th></tr>\n",
		chosenOn, esc(s.ByCol), xh, esc(s.YCol))
	for _, p := range append(append([]Point{}, s.Points...), s.Baselines...) {
		ci := "—"
		if !math.IsNaN(p.CILow) {
			ci = fmt.Sprintf("[%.4f, %.4f]", p.CILow, p.CIHigh)
		}
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%g</td><td>%.4f</td><td>%s</td><td>%.4f</td><td>%.4f</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
			esc(p.Series), p.X, p.Mean, ci, p.Min, p.Max, p.Seeds, esc(p.Delta), esc(p.Accountant), esc(p.Sigma), esc(p.Sensitivity), esc(p.Participation), esc(strings.Join(p.Edges, "; ")), esc(p.Hyper))
	}
	b.WriteString("</table>\n")
	if s.Skipped > 0 {
		fmt.Fprintf(&b, "<p>%d runs not finished (see index.csv).</p>\n", s.Skipped)
	}
	if t := s.index; t != nil {
		cols := []string{"run_id", "status", "aggregator", "participation", "seed", "epsilon", "delta", "accountant", "noise_multiplier", "sensitivity", "final_accuracy", "population_epsilon"}
		heads := map[string]string{"noise_multiplier": "σ", "delta": "δ", "epsilon": "ε"}
		b.WriteString("<h2>All runs</h2>\n<table>\n<tr>")
		var shown []string
		for _, c := range cols {
			if !t.Has(c) || (c == "population_epsilon" && !s.PopulationX) {
				continue
			}
			shown = append(shown, c)
			h := c
			if v, ok := heads[c]; ok {
				h = v
			}
			fmt.Fprintf(&b, "<th>%s</th>", esc(h))
		}
		b.WriteString("</tr>\n")
		for i := range t.Rows {
			b.WriteString("<tr>")
			for _, c := range shown {
				v := t.Get(i, c)
				if c == "run_id" && t.Get(i, "dir") != "" {
					fmt.Fprintf(&b, "<td><a href=\"%s/\">%s</a></td>", esc(t.Get(i, "dir")), esc(v))
					continue
				}
				fmt.Fprintf(&b, "<td>%s</td>", esc(v))
			}
			b.WriteString("</tr>\n")
		}
		b.WriteString("</table>\n")
	}
	b.WriteString("<p>All runs: <a href=\"index.csv\">index.csv</a>.</p>\n")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return results.WriteFileAtomic(path, []byte(b.String()))
}

// valueTicks labels the x axis at the plotted x values.
type valueTicks []float64

// Ticks implements plot.Ticker.
func (v valueTicks) Ticks(lo, hi float64) []plot.Tick {
	var t []plot.Tick
	for _, x := range v {
		if x >= lo && x <= hi {
			t = append(t, plot.Tick{Value: x, Label: fmt.Sprintf("%g", x)})
		}
	}
	return t
}

// xTitle names x in the figure's title (the axis label can be longer).
func (s *Summary) xTitle() string {
	if s.PopulationX {
		return "population ε"
	}
	return label(s.XCol)
}

// xLabel names the x axis.
func (s *Summary) xLabel() string {
	if s.PopulationX {
		return s.axisLabel("population_epsilon")
	}
	return s.axisLabel(s.XCol)
}

// axisLabel is label(col), followed for an epsilon column by the accountant
// and delta it was accounted with.
func (s *Summary) axisLabel(col string) string {
	switch col {
	case "privacy.epsilon", "epsilon", "population_epsilon":
		return label(col) + " (" + s.EpsilonNote() + ")"
	}
	return label(col)
}

func label(col string) string {
	switch col {
	case "privacy.epsilon", "epsilon":
		return "ε"
	case "population_epsilon":
		return "ε of the simulated larger population (privacy.population_scale)"
	case "final_accuracy":
		return "final test accuracy"
	case "best_accuracy":
		return "best test accuracy"
	case "final_test_loss":
		return "final test loss"
	case "audit_rounds_epsilon":
		return "empirical ε, every round observed (canaries)"
	case "audit_final_epsilon":
		return "empirical ε, final model observed (canaries)"
	}
	return col
}

func shortLabel(col string) string {
	if l := label(col); l != col {
		return l
	}
	if i := strings.LastIndexByte(col, '.'); i >= 0 {
		return col[i+1:]
	}
	return col
}
