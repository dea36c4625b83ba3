package figures

import (
	"bytes"
	"encoding/binary"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/image/font/sfnt"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"dpfl/results"
)

// TestDodge: series at the same x are drawn at distinct positions in
// series order, symmetric around x and closer to it than a quarter of the
// gap to the next x (so they never reach a neighbour), on a log and a
// linear axis; a series alone at its x stays on its tick.
func TestDodge(t *testing.T) {
	for _, logX := range []bool{true, false} {
		xs := []float64{2, 4, 8, 16}
		gap := dodgeGap(xs, logX)
		if want := math.Log(2); logX && math.Abs(gap-want) > 1e-12 {
			t.Errorf("log gap %v, want ln 2", gap)
		}
		if !logX && gap != 2 {
			t.Errorf("linear gap %v, want 2", gap)
		}
		scale := func(x float64) float64 {
			if logX {
				return math.Log(x)
			}
			return x
		}
		const n = 5
		for _, x := range xs {
			prev := math.Inf(-1)
			for slot := range n {
				d := dodge(x, slot, n, gap, logX)
				if d <= prev {
					t.Errorf("log %v: x %g slot %d at %g, not right of the previous slot (%g)", logX, x, slot, d, prev)
				}
				if off := math.Abs(scale(d) - scale(x)); off >= gap/4 {
					t.Errorf("log %v: x %g slot %d moved %g, a quarter gap is %g", logX, x, slot, off, gap/4)
				}
				mirror := dodge(x, n-1-slot, n, gap, logX)
				if math.Abs((scale(d)-scale(x))+(scale(mirror)-scale(x))) > 1e-12 {
					t.Errorf("log %v: slots %d and %d not symmetric around %g", logX, slot, n-1-slot, x)
				}
				prev = d
			}
		}
		if d := dodge(4, 0, 1, gap, logX); d != 4 {
			t.Errorf("a series alone moved to %g", d)
		}
	}
}

// TestSlotAt: a point's slot counts the series drawn at its x only; a
// diverged point (loss +Inf, not drawn) takes none.
func TestSlotAt(t *testing.T) {
	s := &Summary{Points: []Point{
		{Series: "a", X: 1, Mean: 0.5}, {Series: "a", X: 2, Mean: 0.5},
		{Series: "b", X: 2, Mean: 0.5}, {Series: "c", X: 2, Mean: math.Inf(1)}, {Series: "d", X: 2, Mean: 0.4},
	}}
	for _, c := range []struct {
		pt         int
		slot, nSer int
	}{{0, 0, 1}, {1, 0, 3}, {2, 1, 3}, {4, 2, 3}} {
		if slot, n := s.slotAt(s.Points[c.pt]); slot != c.slot || n != c.nSer {
			t.Errorf("point %+v: slot %d of %d, want %d of %d", s.Points[c.pt], slot, n, c.slot, c.nSer)
		}
	}
}

// TestClipInterval: an accuracy interval past 1 (two seeds far apart) is
// cut at 1 and says so, a loss interval at 0; one inside its range, or
// none (one seed), is left alone.
func TestClipInterval(t *testing.T) {
	_, lo, hi := meanCI([]float64{0.96, 0.999}) // t(0.975, 1) = 12.7: reaches past 1
	if hi <= 1 {
		t.Fatalf("test data: interval [%g, %g] does not pass 1", lo, hi)
	}
	if clo, chi, c := clipInterval(lo, hi, "final_accuracy"); clo != lo || chi != 1 || !c {
		t.Errorf("accuracy [%g, %g] clipped to [%g, %g] (%v), want [%g, 1]", lo, hi, clo, chi, c, lo)
	}
	if clo, chi, c := clipInterval(-0.2, 2, "final_test_loss"); clo != 0 || chi != 2 || !c {
		t.Errorf("loss clipped to [%g, %g] (%v), want [0, 2]", clo, chi, c)
	}
	if clo, chi, c := clipInterval(0.2, 0.8, "test_accuracy"); clo != 0.2 || chi != 0.8 || c {
		t.Errorf("inside the range: [%g, %g] (%v)", clo, chi, c)
	}
	if clo, chi, c := clipInterval(math.NaN(), math.NaN(), "final_accuracy"); !math.IsNaN(clo) || !math.IsNaN(chi) || c {
		t.Errorf("no interval became [%g, %g] (%v)", clo, chi, c)
	}
	// In the drawn bars: the clipped end, and the note says so.
	s := &Summary{YCol: "final_accuracy", SelectCol: "final_accuracy", XCol: "privacy.epsilon",
		Points: []Point{{Series: "a", X: 2, Mean: 0.98, CILow: lo, CIHigh: hi, Seeds: 2}}}
	e, clipped := s.seriesErrPoints("a", 1, true)
	if top := e.XYs[0].Y + e.YErrors[0].High; !clipped || math.Abs(top-1) > 1e-12 {
		t.Errorf("bar top %g (clipped %v), want 1", top, clipped)
	}
	if n := s.barNote(clipped, false); !strings.Contains(n, "95% Student-t interval of the mean, clipped to [0, 1]") {
		t.Errorf("note %q", n)
	}
	if n := s.barNote(false, false); strings.Contains(n, "clipped") {
		t.Errorf("unclipped note %q", n)
	}
}

// TestSeedNote: the note names every point with fewer than 3 seeds, with
// its count, and is empty when all have 3 or more (negative control).
func TestSeedNote(t *testing.T) {
	s := &Summary{XCol: "privacy.epsilon", Points: []Point{
		{Series: "a", X: 2, Seeds: 3}, {Series: "a", X: 8, Seeds: 2}, {Series: "b", X: 2.0000000000000004, Seeds: 1},
	}, Baselines: []Point{{Series: "np", X: math.Inf(1), Seeds: 1}}}
	n := s.seedNote()
	for _, want := range []string{"Fewer than 3 seeds", "a at ε = 8 (2 seeds)", "b at ε = 2 (1 seed)", "np without noise (1 seed)"} {
		if !strings.Contains(n, want) {
			t.Errorf("note %q lacks %q", n, want)
		}
	}
	if strings.Contains(n, "a at ε = 2 ") {
		t.Errorf("note %q names a point with 3 seeds", n)
	}
	for i := range s.Points {
		s.Points[i].Seeds = 3
	}
	s.Baselines[0].Seeds = 5
	if n := s.seedNote(); n != "" {
		t.Errorf("all points with 3 seeds or more: note %q", n)
	}
}

// TestRoundBand: a point's band is, at each evaluation, the mean and
// t interval of its seeds' test accuracies (recomputed here from the
// t quantile), clipped to [0, 1]; a run evaluated at other rounds is left
// out, not mixed in.
func TestRoundBand(t *testing.T) {
	dir := t.TempDir()
	write := func(d string, rounds []int, accs []float64) {
		m := results.NewMetrics(filepath.Join(dir, d, "metrics.csv"))
		for i, r := range rounds {
			m.Add(results.MetricsRow{Round: r, TestAccuracy: accs[i]})
		}
		if err := m.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	write("s1", []int{5, 10}, []float64{0.5, 0.99})
	write("s2", []int{5, 10}, []float64{0.52, 0.97})
	write("odd", []int{5}, []float64{0.1})
	b, err := roundBand(dir, []string{"s1", "s2", "odd"})
	if err != nil {
		t.Fatal(err)
	}
	if b.seeds != 2 || len(b.rounds) != 2 || b.rounds[1] != 10 {
		t.Fatalf("band over %d seeds, rounds %v; want 2 seeds at 5, 10", b.seeds, b.rounds)
	}
	// Two values 0.02 apart: s = 0.02/√2, half-width t(0.975, 1)·s/√2.
	half := 12.706204736174707 * 0.02 / 2
	if math.Abs(b.mean[0]-0.51) > 1e-12 || math.Abs(b.lo[0]-(0.51-half)) > 1e-9 || math.Abs(b.hi[0]-(0.51+half)) > 1e-9 {
		t.Errorf("round 5: %g [%g, %g], want 0.51 ± %g", b.mean[0], b.lo[0], b.hi[0], half)
	}
	if math.Abs(b.mean[1]-0.98) > 1e-12 || math.Abs(b.lo[1]-(0.98-half)) > 1e-9 || b.hi[1] != 1 {
		t.Errorf("round 10: %g [%g, %g], want 0.98 [%g, 1 (clipped from %g)]", b.mean[1], b.lo[1], b.hi[1], 0.98-half, 0.98+half)
	}
}

// TestYRangeKeepsEveryCurve: the axis range holds the lowest and highest
// value drawn, within the metric's range.
func TestYRangeKeepsEveryCurve(t *testing.T) {
	for _, c := range []struct{ lo, hi float64 }{{0.3, 0.9}, {0.01, 0.999}, {0.5, 0.5}} {
		p := plot.New()
		setYRange(p, c.lo, c.hi, "test_accuracy")
		if p.Y.Min > c.lo || p.Y.Max < c.hi || p.Y.Min < 0 || p.Y.Max > 1 || p.Y.Min >= p.Y.Max {
			t.Errorf("[%g, %g]: axis [%g, %g]", c.lo, c.hi, p.Y.Min, p.Y.Max)
		}
	}
}

// TestLegendAndNotesFit: legend columns are wide enough for their longest
// name, and wrapped note lines fit the width and keep every word.
func TestLegendAndNotesFit(t *testing.T) {
	var items []legendItem
	for _, n := range []string{"bandmf", "dpfedavg", "nonprivate (no noise)", "optimal-mf", "tree", "a much longer series name (no noise)"} {
		items = append(items, legendItem{name: n})
	}
	width := columnWidth - 2*margin
	cols, h := legendLayout(items, width)
	sty := textStyle(tickSize)
	for _, it := range items {
		if legendThumb+3+sty.Width(it.name) > width/vg.Length(cols) {
			t.Errorf("%d columns: %q does not fit", cols, it.name)
		}
	}
	if rows := (len(items) + cols - 1) / cols; h != vg.Length(rows)*legendRow {
		t.Errorf("height %v for %d rows", h, rows)
	}
	note := "Points: mean over seeds at the best hyperparameters (chosen on final_val_accuracy). Bars: 95% Student-t interval of the mean over seeds."
	lines := wrap(textStyle(noteSize), note, width)
	if len(lines) < 2 {
		t.Errorf("note not wrapped: %q", lines)
	}
	for _, l := range lines {
		if textStyle(noteSize).Width(l) > width {
			t.Errorf("line %q wider than %v", l, width)
		}
	}
	if strings.Join(lines, " ") != note {
		t.Errorf("wrapping lost words: %q", lines)
	}
}

// TestReportRounding: report cells are rounded for reading, epsilons to 3
// significant digits, accuracies to 4 decimals; other values, and what is
// not a finite number, stay as written.
func TestReportRounding(t *testing.T) {
	for _, c := range []struct{ col, in, want string }{
		{"epsilon", "2.0000000000000004", "2"},
		{"epsilon", "7.123456789", "7.12"},
		{"population_epsilon", "1234.5", "1230"},
		{"delta", "1e-05", "1e-05"},
		{"noise_multiplier", "1.0581234", "1.058"},
		{"final_accuracy", "0.9123456789", "0.9123"},
		{"epsilon", "inf", "inf"},
		{"seed", "3", "3"},
		{"aggregator", "tree", "tree"},
		{"final_accuracy", "", ""},
	} {
		if got := fmtCell(c.col, c.in); got != c.want {
			t.Errorf("fmtCell(%s, %s) = %q, want %q", c.col, c.in, got, c.want)
		}
	}
	if got := fmtCells("noise_multiplier", "1.23456 / 2"); got != "1.235 / 2" {
		t.Errorf("joined values: %q", got)
	}
}

// TestWriteSmallGrids: the figures are drawn for grids at the edges: only
// non-private runs, a single point of one seed, and y a loss with a
// diverged (+Inf) point, which best.csv keeps but the figure leaves out.
func TestWriteSmallGrids(t *testing.T) {
	type run struct {
		eps, agg, seed string
		acc, loss      float64
	}
	write := func(runs []run) string {
		dir := t.TempDir()
		header := append(append([]string{}, indexColumns...), "privacy.epsilon")
		var rows [][]string
		for i, r := range runs {
			d := "run-" + strconv.Itoa(i)
			row := map[string]string{"run_id": d, "dir": d, "status": "complete", "aggregator.kind": r.agg, "seed": r.seed,
				"epsilon": r.eps, "final_accuracy": strconv.FormatFloat(r.acc, 'g', -1, 64),
				"final_test_loss": strconv.FormatFloat(r.loss, 'g', -1, 64)}
			var rec []string
			for _, h := range indexColumns {
				rec = append(rec, row[h])
			}
			rows = append(rows, append(rec, r.eps))
			m := results.NewMetrics(filepath.Join(dir, d, "metrics.csv"))
			m.Add(results.MetricsRow{Round: 1, TestAccuracy: r.acc / 2})
			m.Add(results.MetricsRow{Round: 2, TestAccuracy: r.acc})
			if err := m.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if err := results.WriteCSV(filepath.Join(dir, "index.csv"), header, rows); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for name, c := range map[string]struct {
		runs []run
		o    Options
	}{
		"non-private only": {[]run{{"inf", "dpfedavg", "1", 0.9, 0.1}, {"inf", "dpfedavg", "2", 0.8, 0.2}}, Options{}},
		"one point":        {[]run{{"4", "tree", "1", 0.7, 0.3}}, Options{}},
		"diverged loss":    {[]run{{"4", "tree", "1", 0.7, 0.3}, {"8", "tree", "1", 0, math.Inf(1)}, {"8", "dpfedavg", "1", 0.5, 0.5}}, Options{Y: "loss"}},
	} {
		dir := write(c.runs)
		paths, err := Write(dir, c.o)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(paths) != 8 {
			t.Errorf("%s: paths %v", name, paths)
		}
	}
}

// TestSeriesStylesDistinct: any two of the first 24 series differ in at
// least two of colour, marker and dash pattern, and in marker or pattern
// (what greyscale keeps).
func TestSeriesStylesDistinct(t *testing.T) {
	for i := range 24 {
		for j := range i {
			a, b := styleOf(i), styleOf(j)
			sameGlyph := a.glyph == b.glyph
			sameDash := slices.Equal(a.dash, b.dash)
			same := 0
			for _, s := range []bool{a.color == b.color, sameGlyph, sameDash} {
				if s {
					same++
				}
			}
			if same > 1 || (sameGlyph && sameDash) {
				t.Errorf("series %d and %d share %d of colour, marker, dash", i, j, same)
			}
		}
	}
	if a, b := styleOf(0), styleOf(24); a.glyph != b.glyph || !slices.Equal(a.dash, b.dash) {
		t.Error("negative control: series 0 and 24 should share marker and dash (periods 8 and 6)")
	}
}

// TestSeriesStylesVariants: a variant (dpsgd-amp-4x of dpsgd-amp) takes
// its method's colour and differs from it in marker and pattern; methods
// differ in colour and in marker or pattern; dpsgd-amp and
// dpsgd-noamp share a prefix that is no series, so they are two methods
// (the negative control); without variants every series keeps styleOf(i).
func TestSeriesStylesVariants(t *testing.T) {
	series := []string{"dpftrlm", "dpftrlm-4x", "dpsgd-amp", "dpsgd-amp-4x", "dpsgd-noamp", "dpsgd-noamp-4x", "nonprivate"}
	family := map[string]string{"dpftrlm-4x": "dpftrlm", "dpsgd-amp-4x": "dpsgd-amp", "dpsgd-noamp-4x": "dpsgd-noamp"}
	root := func(n string) string {
		if r, ok := family[n]; ok {
			return r
		}
		return n
	}
	st := seriesStyles(series)
	for i, a := range series {
		for _, b := range series[:i] {
			sa, sb := st[a], st[b]
			if same := sa.color == sb.color; same != (root(a) == root(b)) {
				t.Errorf("%s and %s: same colour %v, same method %v", a, b, same, root(a) == root(b))
			}
			sameGlyph, sameDash := sa.glyph == sb.glyph, slices.Equal(sa.dash, sb.dash)
			if (sameGlyph && sameDash) || (sa.color == sb.color && (sameGlyph || sameDash)) {
				t.Errorf("%s and %s differ in fewer than two of colour, marker and pattern, or in neither marker nor pattern", a, b)
			}
		}
	}
	plain := []string{"bandmf", "dpfedavg", "nu-ftrl", "optimal-mf", "tree", "nonprivate"}
	for i, n := range plain {
		if got, want := seriesStyles(plain)[n], styleOf(i); got.color != want.color || got.glyph != want.glyph || !slices.Equal(got.dash, want.dash) {
			t.Errorf("%s: style changed without variants", n)
		}
	}
}

// TestPDFText: the PDFs draw text as glyph outlines (no font object, whose
// code page 1252 has no ε or δ), the figures' font has those glyphs, and
// translucent colours reach the PDF writer with straight (not
// premultiplied) components.
func TestPDFText(t *testing.T) {
	dir := writeGrid(t)
	s, err := Summarize(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.epsilonFigure()
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.encode("x.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("%PDF-")) || bytes.Contains(b, []byte("/Type /Font")) || bytes.Contains(b, []byte("/FontFile")) {
		t.Errorf("PDF (%d bytes) has a font object or is no PDF", len(b))
	}
	face := plot.DefaultTextHandler.Cache().Lookup(textStyle(labelSize).Font, vg.Points(labelSize))
	var buf sfnt.Buffer
	for _, r := range "εδσ" {
		if idx, err := face.Face.GlyphIndex(&buf, r); err != nil || idx == 0 {
			t.Errorf("font has no glyph for %q: %v", r, err)
		}
	}
	r, g, bl, a := straightAlpha(color.NRGBA{R: 0, G: 114, B: 178, A: 56}).RGBA()
	if r != 0 || g != 114*0x101 || bl != 178*0x101 || a != 56*0x101 {
		t.Errorf("straight components %d %d %d %d", r, g, bl, a)
	}
	if _, g2, _, _ := (color.NRGBA{R: 0, G: 114, B: 178, A: 56}).RGBA(); g2 == g {
		t.Error("negative control: the premultiplied green should differ")
	}
}

// TestPNGResolution: the PNGs record their resolution (pHYs, pixels per
// metre) and still decode (the chunk's CRC holds); the figure's pixel width
// is its width in inches times the resolution.
func TestPNGResolution(t *testing.T) {
	f := figure{w: columnWidth, h: 2 * vg.Inch, draw: func(draw.Canvas) {}}
	for _, dpi := range []int{runDPI, reportDPI} {
		b, err := f.png(dpi)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%d dpi: %v", dpi, err)
		}
		if want := int(math.Round(float64(columnWidth/vg.Inch) * float64(dpi))); img.Bounds().Dx() != want {
			t.Errorf("%d dpi: %d px wide, want %d", dpi, img.Bounds().Dx(), want)
		}
		i := bytes.Index(b, []byte("pHYs"))
		if i < 0 || len(b) < i+13 {
			t.Fatalf("%d dpi: no pHYs chunk", dpi)
		}
		x, y, unit := binary.BigEndian.Uint32(b[i+4:]), binary.BigEndian.Uint32(b[i+8:]), b[i+12]
		if got := float64(x) * 0.0254; unit != 1 || x != y || math.Abs(got-float64(dpi)) > 0.01 {
			t.Errorf("pHYs %d×%d per unit %d = %.2f dpi, want %d", x, y, unit, got, dpi)
		}
	}
	if got := withDPI([]byte("not a png"), 300); string(got) != "not a png" {
		t.Errorf("non-PNG bytes changed: %q", got)
	}
}

// TestBarNoteSeeds: the note says whose mean a point is — the held-out
// seeds under a tune: section, the same seeds that chose in a full grid,
// every seed where nothing was chosen — and names a common seed count once.
func TestBarNoteSeeds(t *testing.T) {
	base := Summary{YCol: "final_accuracy", SelectCol: "final_val_accuracy", XCol: "privacy.epsilon"}
	cases := []struct {
		p    Point
		want string
	}{
		{Point{Series: "a", X: 2, Seeds: 2, Tuning: []string{"1"}}, "mean over the held-out seeds"},
		{Point{Series: "a", X: 2, Seeds: 3, Tuning: []string{"1", "2", "3"}, TunedOnReported: true}, "of the same seeds"},
		{Point{Series: "a", X: 2, Seeds: 3}, "Points: mean over seeds."},
	}
	for _, c := range cases {
		s := base
		s.Points = []Point{c.p, {Series: "b", X: 2, Seeds: c.p.Seeds, Tuning: c.p.Tuning, TunedOnReported: c.p.TunedOnReported}}
		if n := s.barNote(false, false); !strings.Contains(n, c.want) {
			t.Errorf("%+v: note %q, want %q", c.p, n, c.want)
		}
		if c.p.Seeds == 2 {
			if n := s.seedNote(); n != "Every point has 2 seeds, so its interval is wide." {
				t.Errorf("seed note %q", n)
			}
			s.Points[1].Seeds = 3 // negative control: not every point
			if n := s.seedNote(); !strings.Contains(n, "a at ε = 2 (2 seeds)") {
				t.Errorf("seed note %q", n)
			}
		}
	}
}

// TestBaselinesOnAxis: a non-private baseline near the private points is
// drawn (the usual line just above them); one far from them (seeds that
// diverged: the MNIST BandMF grid's 0.637 under points at 0.92–0.99) is left
// off the axis and given in a note with its mean, interval (clipped to the
// metric's range) and seeds; with no private points every baseline is drawn.
func TestBaselinesOnAxis(t *testing.T) {
	near := Point{Series: "nonprivate", X: math.Inf(1), Mean: 0.986, CILow: 0.984, CIHigh: 0.988, Seeds: 5}
	far := Point{Series: "diverged", X: math.Inf(1), Mean: 0.6367, CILow: 0.0449, CIHigh: 1.2285, Seeds: 5}
	s := &Summary{YCol: "final_accuracy", Baselines: []Point{near, far}}
	drawn, notes := s.baselinesOnAxis(0.92, 0.985)
	if len(drawn) != 1 || drawn[0].Series != "nonprivate" {
		t.Fatalf("drawn %v, want the near baseline only", drawn)
	}
	// The interval is clipped to accuracy's [0, 1], as the bars are.
	if len(notes) != 1 || !strings.Contains(notes[0], "diverged without noise, mean 0.6367, 95% interval [0.0449, 1] over 5 seeds") || !strings.Contains(notes[0], "below") {
		t.Fatalf("notes %q", notes)
	}
	if drawn, notes := s.baselinesOnAxis(math.Inf(1), math.Inf(-1)); len(drawn) != 2 || len(notes) != 0 {
		t.Fatalf("no private points: drawn %d, notes %q", len(drawn), notes)
	}
}

// TestRoundFigureBaselines draws the round figure of two committed
// reproductions: the MNIST BandMF grid's non-private runs (two of five
// seeds diverged), which its epsilon figure leaves off, are given in a
// note here too, not drawn; the paper-size grid's (0.986, as usual) are
// drawn with their legend entry.
func TestRoundFigureBaselines(t *testing.T) {
	for _, c := range []struct {
		name  string
		drawn bool
	}{{"centralized-mnist-bandmf", false}, {"centralized-mnist-paper-size", true}} {
		dir := filepath.Join(paperDir, c.name)
		s, err := Summarize(dir, Options{By: "name"})
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "rounds.svg")
		if err := s.PlotRounds(dir, out); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		svg := string(b)
		if got := strings.Contains(svg, "nonprivate (no noise)"); got != c.drawn {
			t.Errorf("%s: baseline in the legend = %v, want %v", c.name, got, c.drawn)
		}
		if got := strings.Contains(svg, "Not drawn"); got == c.drawn {
			t.Errorf("%s: note on the baseline = %v, want %v", c.name, got, !c.drawn)
		}
	}
}

// TestNiceTicks: the axes are labelled at multiples of 1, 2, 2.5 or 5 times
// a power of ten, 2 to 6 labels within the range, all with one number of
// decimals; the minor ticks are unlabelled and within the range; every
// tick on a round axis is a whole number. Known ranges give the labels a
// reader expects, one of them where gonum's default labels 0.81, 0.9 and
// 0.99 (the negative control: the check below fails for it).
func TestNiceTicks(t *testing.T) {
	labels := func(ts []plot.Tick) []string {
		var l []string
		for _, tk := range ts {
			if !tk.IsMinor() {
				l = append(l, tk.Label)
			}
		}
		return l
	}
	for _, c := range []struct {
		lo, hi float64
		whole  bool
		want   []string
	}{
		{0.7952, 0.9953, false, []string{"0.80", "0.85", "0.90", "0.95"}},
		{0.45, 1.0, false, []string{"0.5", "0.6", "0.7", "0.8", "0.9", "1.0"}},
		{0.0301, 0.0412, false, []string{"0.032", "0.034", "0.036", "0.038", "0.040"}},
		{13, 252, true, []string{"50", "100", "150", "200", "250"}},
		{-60, 2460, true, []string{"0", "500", "1000", "1500", "2000"}},
		{1, 12, true, []string{"2", "4", "6", "8", "10", "12"}},
		{1, 14, true, []string{"5", "10"}},
	} {
		if got := labels(niceTicks{whole: c.whole}.Ticks(c.lo, c.hi)); !slices.Equal(got, c.want) {
			t.Errorf("[%v, %v]: labels %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
	nice := func(ts []plot.Tick, lo, hi float64, whole bool) string {
		var vals []float64
		decimals := -1
		for _, tk := range ts {
			if tk.Value < lo || tk.Value > hi {
				return "tick " + strconv.FormatFloat(tk.Value, 'g', -1, 64) + " outside the range"
			}
			if whole && tk.Value != math.Round(tk.Value) {
				return "tick " + strconv.FormatFloat(tk.Value, 'g', -1, 64) + " on a round axis"
			}
			if tk.IsMinor() {
				continue
			}
			d := 0
			if i := strings.IndexByte(tk.Label, '.'); i >= 0 {
				d = len(tk.Label) - i - 1
			}
			if decimals >= 0 && d != decimals {
				return "labels with different decimals: " + tk.Label
			}
			decimals = d
			if v, err := strconv.ParseFloat(tk.Label, 64); err != nil || math.Abs(v-tk.Value) > 1e-9*math.Max(1, math.Abs(v)) {
				return "label " + tk.Label + " is not its value"
			}
			vals = append(vals, tk.Value)
		}
		if len(vals) < 2 || len(vals) > maxTickLabels {
			return strconv.Itoa(len(vals)) + " labels"
		}
		step, _ := strconv.ParseFloat(strconv.FormatFloat(vals[1]-vals[0], 'g', 6, 64), 64) // without the subtraction's rounding
		m := step / math.Pow10(int(math.Floor(math.Log10(step)+1e-9)))
		if !slices.ContainsFunc([]float64{1, 2, 2.5, 5}, func(q float64) bool { return math.Abs(q-m) < 1e-6 }) || (whole && step != math.Round(step)) {
			return "step " + strconv.FormatFloat(step, 'g', -1, 64)
		}
		for i, v := range vals {
			if k := v / step; math.Abs(k-math.Round(k)) > 1e-6 || (i > 0 && math.Abs(v-vals[i-1]-step) > 1e-6*step) {
				return "labels not at multiples of the step: " + strconv.FormatFloat(v, 'g', -1, 64)
			}
		}
		return ""
	}
	if msg := nice(plot.DefaultTicks{}.Ticks(0.7952, 0.9953), 0.7952, 0.9953, false); msg == "" {
		t.Error("negative control: gonum's default ticks for [0.7952, 0.9953] pass the check")
	}
	for _, r := range [][2]float64{{1e6, 1e6 + 1e-9}, {0, 1e-320}, {-1e300, 1e300}} { // returns, without a panic
		niceTicks{}.Ticks(r[0], r[1])
	}
	rng := rand.New(rand.NewPCG(7, 0))
	for i := range 2000 {
		whole := i%2 == 1
		lo := (rng.Float64() - 0.3) * math.Pow10(rng.IntN(7)-3)
		hi := lo + math.Pow10(rng.IntN(6)-2)*(1+9*rng.Float64())
		if whole {
			lo, hi = math.Round(lo*1000), math.Round(hi*1000)+10
		}
		if msg := nice(niceTicks{whole: whole}.Ticks(lo, hi), lo, hi, whole); msg != "" {
			t.Fatalf("[%v, %v] (whole %v): %s", lo, hi, whole, msg)
		}
	}
}
