package figures

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"dpfl/results"
)

// plotHeight is the height of the epsilon figure's plot (title and axes
// included) and of a row of the round figure's panels.
const (
	plotHeight  = 2.5 * vg.Inch
	panelHeight = 1.9 * vg.Inch
)

// errPoints is an XY series with asymmetric Y errors.
type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

// PlotX draws y against x (see epsilonFigure) into path, a .png (300 dpi),
// .pdf or .svg file.
func (s *Summary) PlotX(path string) error {
	f, err := s.epsilonFigure()
	if err != nil {
		return err
	}
	return f.save(path)
}

// xValues are the distinct x of the plotted points, sorted.
func (s *Summary) xValues() []float64 {
	var xs []float64
	for _, pt := range s.Points {
		if !slices.Contains(xs, pt.X) {
			xs = append(xs, pt.X)
		}
	}
	slices.Sort(xs)
	return xs
}

// logX reports whether the x axis is logarithmic: every x positive.
func (s *Summary) logX() bool {
	xs := s.xValues()
	return len(xs) > 0 && xs[0] > 0
}

// dodgeGap is the smallest distance between neighbouring x values on the
// axis's scale (logarithmic or not); 1 (a factor e) or half the value for
// a single x.
func dodgeGap(xs []float64, logX bool) float64 {
	t := func(x float64) float64 {
		if logX {
			return math.Log(x)
		}
		return x
	}
	gap := math.Inf(1)
	for i := 1; i < len(xs); i++ {
		gap = math.Min(gap, t(xs[i])-t(xs[i-1]))
	}
	if math.IsInf(gap, 1) || gap <= 0 {
		gap = 1
		if !logX && len(xs) == 1 && xs[0] != 0 {
			gap = math.Abs(xs[0]) / 2
		}
	}
	return gap
}

// dodge moves x sideways for series slot of n, so that the series' error
// bars at the same x do not overlap: the n slots spread evenly over half of
// gap (dodgeGap) around x, on the axis's scale.
func dodge(x float64, slot, n int, gap float64, logX bool) float64 {
	if n < 2 {
		return x
	}
	off := (float64(slot) - float64(n-1)/2) * 0.5 * gap / float64(n)
	if logX {
		return x * math.Exp(off)
	}
	return x + off
}

// withheldNote names the points left out because their runs have not all
// finished ("" when none is).
func (s *Summary) withheldNote() string {
	if len(s.Withheld) == 0 {
		return ""
	}
	return "Not plotted until all their runs finish: " + s.withheldList() + "."
}

// seedNote names the points with fewer than 3 seeds, whose interval is
// wide (2 seeds) or missing (1 seed); empty when there are none.
func (s *Summary) seedNote() string {
	var few []string
	for _, p := range append(append([]Point{}, s.Points...), s.Baselines...) {
		if p.Seeds >= 3 {
			continue
		}
		at := fmt.Sprintf("%s at %s = %s", p.Series, shortLabel(s.XCol), fmtX(s.XCol, p.X))
		if math.IsInf(p.X, 1) {
			at = p.Series + " without noise"
		}
		few = append(few, fmt.Sprintf("%s (%d seed%s)", at, p.Seeds, plural(p.Seeds)))
	}
	if len(few) == 0 {
		return ""
	}
	if all := append(append([]Point{}, s.Points...), s.Baselines...); len(few) == len(all) && sameSeeds(all) {
		if all[0].Seeds == 1 {
			return "Every point has 1 seed, so no interval."
		}
		return fmt.Sprintf("Every point has %d seeds, so its interval is wide.", all[0].Seeds)
	}
	if len(few) > 6 {
		few = append(few[:5], fmt.Sprintf("and %d more", len(few)-5))
	}
	return "Fewer than 3 seeds, so a wide interval (2 seeds) or none (1 seed): " + strings.Join(few, ", ") + "."
}

// sameSeeds reports whether every point has the same number of seeds.
func sameSeeds(pts []Point) bool {
	for _, p := range pts {
		if p.Seeds != pts[0].Seeds {
			return false
		}
	}
	return true
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// fmtX formats an x value: an epsilon to 3 significant digits, another
// value in full.
func fmtX(col string, x float64) string {
	if math.IsInf(x, 1) {
		return "inf"
	}
	if strings.Contains(col, "epsilon") {
		return sig(x, 3)
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// sig formats v to n significant digits, in plain notation between 1e-4
// and 1e6 ("16", "0.865", "1230").
func sig(v float64, n int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', n, 64), 64)
	if a := math.Abs(r); r != 0 && (a < 1e-4 || a >= 1e6) {
		return strconv.FormatFloat(r, 'g', -1, 64)
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// compose stacks a plot area of height plotH, a legend in columns and
// notes wrapped to the figure's width into a figure of width w.
func compose(w, plotH vg.Length, items []legendItem, notes []string, drawPlot func(draw.Canvas)) figure {
	inner := w - 2*margin
	cols, legH := legendLayout(items, inner)
	var lines []string
	for _, n := range notes {
		if n != "" {
			lines = append(lines, wrap(textStyle(noteSize), n, inner)...)
		}
	}
	gap := vg.Points(4)
	notesH := vg.Length(len(lines)) * noteLine
	h := plotH + gap + legH + gap + notesH + 2*margin
	return figure{w: w, h: h, draw: func(c draw.Canvas) {
		top := c.Max.Y
		plotC := c
		plotC.Min.Y = top - plotH
		drawPlot(plotC)
		legC := c
		legC.Max.Y = plotC.Min.Y - gap
		drawLegend(legC, items, cols)
		noteC := c
		noteC.Max.Y = legC.Max.Y - legH - gap
		drawNotes(noteC, lines)
	}}
}

// epsilonFigure draws y against x at a paper's column width: one line per
// series through the best hyperparameters' means, with bars of the 95%
// t interval over seeds clipped to the metric's range, series at the same
// x offset sideways, each non-private baseline as a thin horizontal line
// (its series' colour, a marker at the right end; one far from the private
// points is given in a note instead, see baselinesOnAxis), the legend and a
// note on what the bars are below the plot; the x axis is logarithmic when
// every x is positive.
func (s *Summary) epsilonFigure() (figure, error) {
	// Long axis labels (an accountant list, a population epsilon) wrap
	// within the axis rather than squeeze the plot.
	fit := func(l string, w vg.Length) string { return strings.Join(wrap(textStyle(labelSize), l, w), "\n") }
	p := paperPlot(label(s.YCol)+" vs "+s.xTitle(), fit(s.xLabel(), columnWidth-vg.Inch), fit(s.axisLabel(s.YCol), plotHeight-vg.Inch))
	xs, logX := s.xValues(), s.logX()
	p.X.Tick.Marker = valueTicks(xs)
	if logX {
		p.X.Scale = plot.LogScale{}
	}
	series := s.Series()
	styles := seriesStyles(series)
	var withPoints []string
	for _, name := range series {
		if slices.ContainsFunc(s.Points, func(pt Point) bool { return pt.Series == name && drawn(pt) }) {
			withPoints = append(withPoints, name)
		}
	}
	gap := dodgeGap(xs, logX)
	var items []legendItem
	ylo, yhi := math.Inf(1), math.Inf(-1)
	clipped := false
	xlo, xhi := math.Inf(1), math.Inf(-1)
	for _, name := range withPoints {
		st := styles[name]
		e, c := s.seriesErrPoints(name, gap, logX)
		clipped = clipped || c
		for i, xy := range e.XYs {
			ylo, yhi = math.Min(ylo, xy.Y-e.YErrors[i].Low), math.Max(yhi, xy.Y+e.YErrors[i].High)
			xlo, xhi = math.Min(xlo, xy.X), math.Max(xhi, xy.X)
		}
		item, err := addErrSeries(p, e, st, name)
		if err != nil {
			return figure{}, err
		}
		items = append(items, item)
	}
	setXRange(p, xlo, xhi, gap, logX)
	notes := []string{s.barNote(clipped, len(withPoints) > 1), s.seedNote(), s.populationNote(), s.withheldNote()}
	if len(withPoints) == 0 { // only non-private runs: their lines, on no x scale
		p.X.Min, p.X.Max, p.X.Scale, p.X.Tick.Marker = 0, 1, plot.LinearScale{}, plot.ConstantTicks{}
		notes[0] = "No private runs to plot: only the runs without noise (mean over seeds)."
	}
	onAxis, off := s.baselinesOnAxis(ylo, yhi)
	notes = append(notes, off...)
	for _, b := range onAxis {
		item, err := addBaseline(p, b, styles[b.Series])
		if err != nil {
			return figure{}, err
		}
		items = append(items, item)
		ylo, yhi = math.Min(ylo, b.Mean), math.Max(yhi, b.Mean)
	}
	setYRange(p, ylo, yhi, s.YCol)
	return compose(columnWidth, plotHeight, items, notes, p.Draw), nil
}

// baselineSpan is how far a non-private baseline may widen the epsilon
// figure's y range: it is drawn only when the private points' range
// [ylo, yhi] keeps at least 1/baselineSpan of the range with it.
const baselineSpan = 4

// baselinesOnAxis splits the non-private baselines (those with a finite
// mean) into those the epsilon figure draws and, for the others, a note
// each with the baseline's mean, interval and seeds: a baseline far from
// the private points (one whose seeds diverged, say) would squeeze them
// into a sliver of the plot. Without private points every baseline is
// drawn.
func (s *Summary) baselinesOnAxis(ylo, yhi float64) (drawn []Point, notes []string) {
	span := yhi - ylo
	if span <= 0 {
		span = math.Max(0.1*math.Abs(yhi), 0.01) // as setYRange
	}
	for _, b := range s.Baselines {
		if math.IsInf(b.Mean, 0) {
			continue
		}
		if math.IsInf(ylo, 0) || math.IsInf(yhi, 0) || baselineSpan*span >= math.Max(yhi, b.Mean)-math.Min(ylo, b.Mean) {
			drawn = append(drawn, b)
			continue
		}
		where := "below"
		if b.Mean > yhi {
			where = "above"
		}
		lo, hi, _ := clipInterval(b.CILow, b.CIHigh, s.YCol) // as the bars
		notes = append(notes, fmt.Sprintf("Not drawn, far %s the private points: %s without noise, mean %.4g, 95%% interval [%.4g, %.4g] over %d seeds.",
			where, b.Series, b.Mean, lo, hi, b.Seeds))
	}
	return drawn, notes
}

// pointsRange is the y range the epsilon figure's private points span with
// their bars (as epsilonFigure computes it), which decides which baselines
// the figures draw (baselinesOnAxis); ±Inf without private points.
func (s *Summary) pointsRange() (ylo, yhi float64) {
	ylo, yhi = math.Inf(1), math.Inf(-1)
	for _, name := range s.Series() {
		e, _ := s.seriesErrPoints(name, 0, false)
		for i, xy := range e.XYs {
			ylo, yhi = math.Min(ylo, xy.Y-e.YErrors[i].Low), math.Max(yhi, xy.Y+e.YErrors[i].High)
		}
	}
	return ylo, yhi
}

// barNote says what the points and bars of the epsilon figure are.
func (s *Summary) barNote(clipped, several bool) string {
	points := s.whoseMean()
	clip := ""
	if lo, hi := metricRange(s.YCol); clipped {
		clip = fmt.Sprintf(", clipped to [%g, %g]", lo, hi)
	}
	side := ""
	if several {
		side = " Series at the same " + shortLabel(s.XCol) + " are drawn side by side."
	}
	return fmt.Sprintf("Points: %s. Bars: 95%% Student-t interval of the mean%s.%s", points, clip, side)
}

// drawn reports whether a point is drawn (a diverged run's +Inf loss is
// in best.csv only).
func drawn(p Point) bool { return !math.IsInf(p.Mean, 0) }

// slotAt is pt's place among the n series drawn at its x, in series order.
func (s *Summary) slotAt(pt Point) (slot, n int) {
	for _, q := range s.Points {
		if q.X == pt.X && drawn(q) {
			if q.Series < pt.Series {
				slot++
			}
			n++
		}
	}
	return slot, n
}

// seriesErrPoints is series name's points, each dodged among the series
// drawn at its x, with their intervals clipped to y's range, and whether
// any was clipped.
func (s *Summary) seriesErrPoints(name string, gap float64, logX bool) (errPoints, bool) {
	var e errPoints
	clipped := false
	for _, pt := range s.Points {
		if pt.Series != name || !drawn(pt) {
			continue
		}
		slot, n := s.slotAt(pt)
		e.XYs = append(e.XYs, plotter.XY{X: dodge(pt.X, slot, n, gap, logX), Y: pt.Mean})
		lo, hi, c := clipInterval(pt.CILow, pt.CIHigh, s.YCol)
		clipped = clipped || c
		if math.IsNaN(lo) || math.IsNaN(hi) {
			lo, hi = pt.Mean, pt.Mean // one seed: no interval
		}
		e.YErrors = append(e.YErrors, struct{ Low, High float64 }{pt.Mean - lo, hi - pt.Mean})
	}
	return e, clipped
}

// addErrSeries adds a line with markers and error bars in style st.
func addErrSeries(p *plot.Plot, e errPoints, st seriesStyle, name string) (legendItem, error) {
	l, sc, err := plotter.NewLinePoints(e.XYs)
	if err != nil {
		return legendItem{}, fmt.Errorf("figures: %w", err)
	}
	l.Color, l.Width, l.Dashes = st.color, vg.Points(1), st.dash
	sc.Color, sc.Shape, sc.Radius = st.color, st.glyph, vg.Points(2.2)
	bars, err := plotter.NewYErrorBars(e)
	if err != nil {
		return legendItem{}, fmt.Errorf("figures: %w", err)
	}
	bars.Color, bars.Width, bars.CapWidth = st.color, vg.Points(0.8), vg.Points(3)
	p.Add(bars, l, sc)
	return legendItem{name, []plot.Thumbnailer{l, sc}}, nil
}

// addBaseline adds a non-private baseline across the x range: a thin line
// in its series' colour with its marker at the right end.
func addBaseline(p *plot.Plot, b Point, st seriesStyle) (legendItem, error) {
	l, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: b.Mean}, {X: p.X.Max, Y: b.Mean}})
	if err != nil {
		return legendItem{}, fmt.Errorf("figures: %w", err)
	}
	l.Color, l.Width, l.Dashes = st.color, vg.Points(0.8), []vg.Length{vg.Points(6), vg.Points(2)}
	sc, err := plotter.NewScatter(plotter.XYs{{X: p.X.Max, Y: b.Mean}})
	if err != nil {
		return legendItem{}, fmt.Errorf("figures: %w", err)
	}
	sc.Color, sc.Shape, sc.Radius = st.color, st.glyph, vg.Points(2.2)
	p.Add(l, sc)
	return legendItem{b.Series + " (no noise)", []plot.Thumbnailer{l, sc}}, nil
}

// setXRange fixes the x axis around the dodged points' range [lo, hi],
// with room for the outer markers and bars.
func setXRange(p *plot.Plot, lo, hi, gap float64, logX bool) {
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return
	}
	pad := 0.3 * gap
	if logX {
		p.X.Min, p.X.Max = lo*math.Exp(-pad), hi*math.Exp(pad)
	} else {
		p.X.Min, p.X.Max = lo-pad, hi+pad
	}
}

// setYRange fixes the y axis to [lo, hi] with 5% room on each side, within
// col's range.
func setYRange(p *plot.Plot, lo, hi float64, col string) {
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return
	}
	rlo, rhi := metricRange(col)
	span := hi - lo
	if span <= 0 {
		span = math.Max(0.1*math.Abs(hi), 0.01)
	}
	p.Y.Min, p.Y.Max = math.Max(rlo, lo-0.05*span), math.Min(rhi, hi+0.05*span)
}

// band is test accuracy by round over a point's seeds: the mean and its
// 95% t interval (NaN for one seed).
type band struct {
	rounds, mean, lo, hi []float64
	seeds                int
}

// roundBand reads the runs' metrics.csv and computes their band; runs
// evaluated at other rounds than the first are left out rather than mixed.
func roundBand(dir string, dirs []string) (band, error) {
	var b band
	var ys [][]float64 // by round, over seeds
	for _, d := range dirs {
		rows, err := results.ReadMetrics(filepath.Join(dir, d, "metrics.csv"))
		if err != nil {
			return band{}, err
		}
		if b.seeds == 0 {
			for _, r := range rows {
				b.rounds = append(b.rounds, float64(r.Round))
			}
			ys = make([][]float64, len(rows))
		}
		if len(rows) != len(b.rounds) {
			continue
		}
		for i, r := range rows {
			a := r.TestAccuracy
			if math.IsNaN(a) {
				a = 0
			}
			ys[i] = append(ys[i], a)
		}
		b.seeds++
	}
	for _, y := range ys {
		m, lo, hi := meanCI(y)
		lo, hi, _ = clipInterval(lo, hi, "test_accuracy")
		b.mean, b.lo, b.hi = append(b.mean, m), append(b.lo, lo), append(b.hi, hi)
	}
	return b, nil
}

// whoseMean says whose mean a plotted point is: the held-out seeds' under a
// tune: section, the same seeds that chose in a full grid, every seed's
// where nothing was chosen.
func (s *Summary) whoseMean() string {
	points := "mean over seeds"
	for _, p := range s.Points {
		switch {
		case p.TunedOnReported:
			points = "mean over seeds at the best hyperparameters (chosen on " + s.SelectCol + " of the same seeds)"
		case len(p.Tuning) > 0 && points == "mean over seeds":
			points = "mean over the held-out seeds at the hyperparameters the tuning seeds chose (on " + s.SelectCol + ")"
		}
	}
	return points
}
