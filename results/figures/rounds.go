package figures

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PlotRounds draws test accuracy against round (see roundFigure) into
// path, a .png (300 dpi), .pdf or .svg file.
func (s *Summary) PlotRounds(dir, path string) error {
	f, err := s.roundFigure(dir)
	if err != nil {
		return err
	}
	return f.save(path)
}

// panelGrid is the number of columns and rows of n panels: about square,
// at most 4 columns.
func panelGrid(n int) (cols, rows int) {
	cols = min(4, max(1, int(math.Ceil(math.Sqrt(float64(n))))))
	return cols, (n + cols - 1) / cols
}

// roundFigure draws test accuracy against round at a paper's text width,
// one panel per x value (sharing the y axis): in each, every series' chosen
// runs as the mean over seeds with a shaded 95% t interval band, and the
// non-private runs; the legend and a note on the bands below the panels.
func (s *Summary) roundFigure(dir string) (figure, error) {
	xs := s.xValues()
	n := max(1, len(xs))
	cols, rows := panelGrid(n)
	styles := seriesStyles(s.Series())
	plots := make([][]*plot.Plot, rows)
	for r := range plots {
		plots[r] = make([]*plot.Plot, cols)
	}
	for k := range n {
		title := ""
		if k < len(xs) {
			title = fmt.Sprintf("%s = %s", s.xTitle(), fmtX(s.XCol, xs[k]))
		}
		xl, yl := "", ""
		if k/cols == rows-1 || k+cols >= n {
			xl = "round"
		}
		if k%cols == 0 {
			yl = "test accuracy"
		}
		p := paperPlot(title, xl, yl)
		p.X.Tick.Marker = niceTicks{whole: true}
		plots[k/cols][k%cols] = p
	}
	items := map[string]legendItem{}
	var order []string
	ylo, yhi := math.Inf(1), math.Inf(-1)
	rlo, rhi := math.Inf(1), math.Inf(-1)
	// A baseline is drawn as its mean curve alone (no band), unless the
	// epsilon figure leaves it off as far from the private points: then the
	// same note gives it here.
	onAxis, off := s.baselinesOnAxis(s.pointsRange())
	for _, pt := range append(append([]Point{}, s.Points...), onAxis...) {
		b, err := roundBand(dir, pt.Dirs)
		if err != nil {
			return figure{}, err
		}
		if len(b.rounds) == 0 {
			continue
		}
		baseline := math.IsInf(pt.X, 1)
		name := pt.Series
		if baseline {
			name += " (no noise)"
		}
		st := styles[pt.Series]
		for k := range n {
			if !baseline && xs[k] != pt.X {
				continue
			}
			item, err := addBand(plots[k/cols][k%cols], b, st, baseline)
			if err != nil {
				return figure{}, err
			}
			if _, ok := items[name]; !ok {
				items[name], order = legendItem{name, item}, append(order, name)
			}
		}
		if baseline {
			ylo, yhi = math.Min(ylo, slices.Min(b.mean)), math.Max(yhi, slices.Max(b.mean))
		} else {
			ylo, yhi = math.Min(ylo, bandMin(b)), math.Max(yhi, bandMax(b))
		}
		rlo, rhi = math.Min(rlo, b.rounds[0]), math.Max(rhi, b.rounds[len(b.rounds)-1])
	}
	var legend []legendItem
	for _, name := range order {
		legend = append(legend, items[name])
	}
	for k := range n {
		p := plots[k/cols][k%cols]
		setYRange(p, ylo, yhi, "test_accuracy")
		if pad := 0.03 * math.Max(rhi-rlo, 1); !math.IsInf(rlo, 0) {
			p.X.Min, p.X.Max = rlo-pad, rhi+pad
		}
	}
	w := textWidth
	if cols == 1 {
		w = columnWidth
	}
	notes := append([]string{s.bandNote(len(onAxis) > 0), s.seedNote()}, off...)
	return compose(w, vg.Length(rows)*panelHeight, legend, notes, func(c draw.Canvas) {
		tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(6), PadY: vg.Points(6)}
		cs := plot.Align(plots, tiles, c)
		for r := range plots {
			for k, p := range plots[r] {
				if p != nil {
					p.Draw(cs[r][k])
				}
			}
		}
	}), nil
}

// bandNote says what the curves and bands of the round figure are.
func (s *Summary) bandNote(baselines bool) string {
	base := ""
	if baselines {
		base = " The runs without noise appear in every panel."
	}
	return "Curves: test accuracy, " + s.whoseMean() + ". Bands: 95% Student-t interval of the mean at each evaluation, clipped to [0, 1]." + base
}

// addBand adds b's mean curve (markers at about 8 evaluations) over its
// shaded interval in style st; a baseline is thinner, without a band. It
// returns the legend's thumbnails.
func addBand(p *plot.Plot, b band, st seriesStyle, baseline bool) ([]plot.Thumbnailer, error) {
	var mean, marks plotter.XYs
	step := max(1, (len(b.rounds)+7)/8)
	for i, r := range b.rounds {
		mean = append(mean, plotter.XY{X: r, Y: b.mean[i]})
		if i%step == 0 || i == len(b.rounds)-1 {
			marks = append(marks, plotter.XY{X: r, Y: b.mean[i]})
		}
	}
	l, err := plotter.NewLine(mean)
	if err != nil {
		return nil, fmt.Errorf("figures: %w", err)
	}
	l.Color, l.Width, l.Dashes = st.color, vg.Points(1), st.dash
	sc, err := plotter.NewScatter(marks)
	if err != nil {
		return nil, fmt.Errorf("figures: %w", err)
	}
	sc.Color, sc.Shape, sc.Radius = st.color, st.glyph, vg.Points(2)
	thumbs := []plot.Thumbnailer{l, sc}
	if poly := bandPolygon(b, st); poly != nil && !baseline {
		p.Add(poly)
		thumbs = append([]plot.Thumbnailer{poly}, thumbs...)
	}
	if baseline {
		l.Width = vg.Points(0.8)
	}
	p.Add(l, sc)
	return thumbs, nil
}

// bandPolygon is the shaded region between b's interval ends (nil
// without an interval).
func bandPolygon(b band, st seriesStyle) *plotter.Polygon {
	var ring plotter.XYs
	for i, r := range b.rounds {
		if !math.IsNaN(b.hi[i]) {
			ring = append(ring, plotter.XY{X: r, Y: b.hi[i]})
		}
	}
	for i := len(b.rounds) - 1; i >= 0; i-- {
		if !math.IsNaN(b.lo[i]) {
			ring = append(ring, plotter.XY{X: b.rounds[i], Y: b.lo[i]})
		}
	}
	if len(ring) < 3 {
		return nil
	}
	poly, err := plotter.NewPolygon(ring)
	if err != nil {
		return nil
	}
	poly.Color = color.NRGBA{R: st.color.R, G: st.color.G, B: st.color.B, A: 56}
	poly.LineStyle.Width = 0
	return poly
}

// bandMin and bandMax are the lowest and highest of b's means and interval
// ends.
func bandMin(b band) float64 {
	m := math.Inf(1)
	for i := range b.mean {
		m = math.Min(m, b.mean[i])
		if !math.IsNaN(b.lo[i]) {
			m = math.Min(m, b.lo[i])
		}
	}
	return m
}

func bandMax(b band) float64 {
	m := math.Inf(-1)
	for i := range b.mean {
		m = math.Max(m, b.mean[i])
		if !math.IsNaN(b.hi[i]) {
			m = math.Max(m, b.hi[i])
		}
	}
	return m
}
