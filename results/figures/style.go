package figures

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image/color"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	xfont "golang.org/x/image/font"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"

	"dpfl/results"
)

// The one style of every figure: the palette, glyphs and dash patterns of
// the series, the sizes of a paper's column and text width, the fonts, and
// the resolution of the PNGs.
const (
	runDPI = 300 // PNGs written next to the PDFs
	// reportDPI is the resolution of the copies embedded in report.html.
	reportDPI = 110
	// columnWidth and textWidth are a two-column paper's column and full
	// text width.
	columnWidth = 3.5 * vg.Inch
	textWidth   = 7 * vg.Inch
	titleSize   = 9 // points
	labelSize   = 8
	tickSize    = 7
	noteSize    = 6.5
	margin      = 4 // points around a figure, so that nothing touches an edge
)

// okabeIto is the Okabe-Ito colour-blind-safe palette (without its yellow,
// which does not show on white; black last).
var okabeIto = []color.RGBA{
	{R: 0, G: 114, B: 178, A: 255},   // blue
	{R: 213, G: 94, B: 0, A: 255},    // vermillion
	{R: 0, G: 158, B: 115, A: 255},   // bluish green
	{R: 204, G: 121, B: 167, A: 255}, // reddish purple
	{R: 230, G: 159, B: 0, A: 255},   // orange
	{R: 86, G: 180, B: 233, A: 255},  // sky blue
	{R: 0, G: 0, B: 0, A: 255},       // black
}

// glyphs are the series' markers, distinct in greyscale.
var glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{},
	draw.RingGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}, draw.SquareGlyph{}}

// dashes are the series' line patterns (solid first).
var dashes = [][]vg.Length{
	nil,
	{vg.Points(5), vg.Points(2)},
	{vg.Points(1), vg.Points(1.5)},
	{vg.Points(5), vg.Points(2), vg.Points(1), vg.Points(2)},
	{vg.Points(8), vg.Points(2.5)},
	{vg.Points(2.5), vg.Points(2.5)},
}

// seriesStyle is series i's colour, marker and line pattern: the three
// cycle with periods 7, 8 and 6, so that any two of the first 24 series
// differ in at least two of them (in greyscale, in marker or pattern).
type seriesStyle struct {
	color color.RGBA
	glyph draw.GlyphDrawer
	dash  []vg.Length
}

func styleOf(i int) seriesStyle {
	return seriesStyle{okabeIto[i%len(okabeIto)], glyphs[i%len(glyphs)], dashes[i%len(dashes)]}
}

// seriesStyles gives series i of the sorted names styleOf(i), except that
// a variant, a series named after another one plus "-" and a suffix
// (dpsgd-amp-4x of dpsgd-amp), takes the colour of the series it varies:
// a figure shows a method and its variants in one colour, told apart by
// marker and line pattern, as the papers draw them. The families' colours
// follow their order, so without variants every series keeps styleOf(i).
func seriesStyles(series []string) map[string]seriesStyle {
	root := func(name string) string {
		for {
			base := ""
			for _, b := range series {
				if len(b) > len(base) && strings.HasPrefix(name, b+"-") {
					base = b
				}
			}
			if base == "" {
				return name
			}
			name = base
		}
	}
	var roots []string
	out := make(map[string]seriesStyle, len(series))
	for i, name := range series {
		r := root(name)
		if !slices.Contains(roots, r) {
			roots = append(roots, r)
		}
		st := styleOf(i)
		st.color = okabeIto[slices.Index(roots, r)%len(okabeIto)]
		out[name] = st
	}
	return out
}

// textStyle is the figures' font at size points.
func textStyle(size float64) text.Style {
	return text.Style{Color: color.Black, Font: font.From(plot.DefaultFont, vg.Points(size)), Handler: plot.DefaultTextHandler}
}

// paperPlot is an empty plot with a grid, the given labels and the
// figures' font sizes.
func paperPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(titleSize)
	p.Title.Padding = vg.Points(3)
	p.X.Label.Text, p.Y.Label.Text = x, y
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(labelSize)
		a.Tick.Label.Font.Size = vg.Points(tickSize)
		a.Label.Padding = vg.Points(2)
	}
	p.Y.Tick.Marker = niceTicks{}
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = color.Gray{Y: 225}, color.Gray{Y: 225}
	p.Add(g)
	return p
}

// maxTickLabels is the most labelled ticks niceTicks puts on an axis.
const maxTickLabels = 6

// niceTicks labels a linear axis at the multiples of the smallest step of
// the form 1, 2, 2.5 or 5 times a power of ten that gives at most
// maxTickLabels labels within the axis (0.80, 0.85, 0.90, 0.95, where
// gonum's default can choose 0.81, 0.90, 0.99), all with the same number
// of decimals, and draws unlabelled minor ticks halfway between them. With whole
// set, every tick is a whole number (rounds).
type niceTicks struct{ whole bool }

// Ticks implements plot.Ticker.
func (n niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil
	}
	mag := int(math.Floor(math.Log10(hi-lo))) - 1
	for ; ; mag++ {
		for _, m := range []float64{1, 2, 2.5, 5} {
			step := m * math.Pow10(mag)
			if n.whole && step != math.Trunc(step) {
				continue
			}
			first, last := math.Ceil(lo/step-1e-9), math.Floor(hi/step+1e-9)
			if !(math.Abs(first) < 1<<50 && math.Abs(last) < 1<<50) {
				return nil // a range too narrow for its values' precision
			}
			if last-first+1 > maxTickLabels {
				continue
			}
			return slices.DeleteFunc(tickSet(first, last, m, mag), func(t plot.Tick) bool {
				return t.Value < lo || t.Value > hi || (n.whole && t.Value != math.Round(t.Value))
			})
		}
	}
}

// tickSet is the ticks k·m·10^mag for k in [first, last], labelled with
// the decimals the step needs, and the minor ticks between and around them
// (at half steps), some beyond them.
func tickSet(first, last, m float64, mag int) []plot.Tick {
	at := func(k float64) float64 { // k·m·10^mag, exact for the labels' decimals
		if mag < 0 {
			return k * m / math.Pow10(-mag)
		}
		return k * m * math.Pow10(mag)
	}
	decimals := max(0, -mag)
	if m == 2.5 && mag <= 0 {
		decimals++
	}
	var ts []plot.Tick
	for k := first - 1; k <= last; k++ {
		if k >= first {
			ts = append(ts, plot.Tick{Value: at(k), Label: strconv.FormatFloat(at(k), 'f', decimals, 64)})
		}
		ts = append(ts, plot.Tick{Value: at(k + 0.5)})
	}
	return ts
}

// legendItem is one legend entry: a name and the thumbnails drawn beside
// it.
type legendItem struct {
	name   string
	thumbs []plot.Thumbnailer
}

// legendLayout places items in columns of equal width across a canvas of
// the given width; it returns the number of columns and the height.
func legendLayout(items []legendItem, width vg.Length) (cols int, height vg.Length) {
	if len(items) == 0 {
		return 0, 0
	}
	sty := textStyle(tickSize)
	widest := vg.Length(0)
	for _, it := range items {
		widest = max(widest, sty.Width(it.name))
	}
	colW := widest + legendThumb + vg.Points(10)
	cols = max(1, min(len(items), int(width/colW)))
	rows := (len(items) + cols - 1) / cols
	return cols, vg.Length(rows) * legendRow
}

const (
	legendThumb = 26 // points: wide enough for a dash pattern and a marker
	legendRow   = 10 // points per legend line
)

// drawLegend draws items in cols columns, row by row, from the top of c.
func drawLegend(c draw.Canvas, items []legendItem, cols int) {
	if cols == 0 {
		return
	}
	sty := textStyle(tickSize)
	colW := (c.Max.X - c.Min.X) / vg.Length(cols)
	for i, it := range items {
		row, col := i/cols, i%cols
		x := c.Min.X + vg.Length(col)*colW
		top := c.Max.Y - vg.Length(row)*legendRow
		icon := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x, Y: top - legendRow + 1.5}, Max: vg.Point{X: x + legendThumb, Y: top - 1.5}}}
		for _, t := range it.thumbs {
			t.Thumbnail(&icon)
		}
		sty.YAlign = draw.YCenter
		c.FillText(sty, vg.Point{X: x + legendThumb + 3, Y: top - legendRow/2}, it.name)
	}
}

// wrap breaks a note into lines no wider than width in style sty.
func wrap(sty text.Style, note string, width vg.Length) []string {
	var lines []string
	for _, para := range strings.Split(note, "\n") {
		line := ""
		for _, w := range strings.Fields(para) {
			try := strings.TrimSpace(line + " " + w)
			if line != "" && sty.Width(try) > width {
				lines = append(lines, line)
				try = w
			}
			line = try
		}
		if line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// noteLine is the height of a line of notes.
const noteLine = noteSize * 1.3

// drawNotes writes lines from the top of c.
func drawNotes(c draw.Canvas, lines []string) {
	sty := textStyle(noteSize)
	sty.YAlign = draw.YTop
	for i, l := range lines {
		c.FillText(sty, vg.Point{X: c.Min.X, Y: c.Max.Y - vg.Length(i)*noteLine}, l)
	}
}

// figure is a drawing with its size.
type figure struct {
	w, h vg.Length
	draw func(draw.Canvas)
}

// render draws f on a white background inside the figures' margin.
func (f figure) render(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	f.draw(draw.Crop(c, margin, -margin, margin, -margin))
}

// png renders f as a PNG at dpi dots per inch.
func (f figure) png(dpi int) ([]byte, error) {
	img := vgimg.NewWith(vgimg.UseWH(f.w, f.h), vgimg.UseDPI(dpi))
	f.render(draw.New(img))
	var b bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&b); err != nil {
		return nil, fmt.Errorf("figures: %w", err)
	}
	return withDPI(b.Bytes(), dpi), nil
}

// withDPI inserts a pHYs chunk recording dpi after a PNG's header chunk
// (the encoder writes none), so that a document includes the figure at its
// drawn size.
func withDPI(p []byte, dpi int) []byte {
	const ihdrEnd = 8 + 4 + 4 + 13 + 4 // signature, IHDR length, type, data, CRC
	if len(p) < ihdrEnd || string(p[12:16]) != "IHDR" {
		return p
	}
	ppm := uint32(math.Round(float64(dpi) / 0.0254)) // pixels per metre
	chunk := binary.BigEndian.AppendUint32(nil, 9)
	chunk = append(chunk, "pHYs"...)
	chunk = binary.BigEndian.AppendUint32(chunk, ppm)
	chunk = binary.BigEndian.AppendUint32(chunk, ppm)
	chunk = append(chunk, 1) // the unit is the metre
	chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
	return slices.Concat(p[:ihdrEnd], chunk, p[ihdrEnd:])
}

// encode renders f in the format of path's extension: .png (runDPI), .pdf
// or .svg.
func (f figure) encode(path string) ([]byte, error) {
	var c vg.CanvasWriterTo
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png":
		return f.png(runDPI)
	case ".pdf":
		c = outlinePDF{vgpdf.New(f.w, f.h)}
	case ".svg":
		c = vgsvg.New(f.w, f.h)
	default:
		return nil, fmt.Errorf("figures: %s: want a .png, .pdf or .svg file", path)
	}
	f.render(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("figures: %w", err)
	}
	return pdfDates.ReplaceAll(b.Bytes(), []byte("${1}"+fixedPDFDate+")")), nil
}

// pdfDates matches the creation and modification dates that the PDF
// writer takes from the clock; encode replaces them by fixedPDFDate (the
// same length, so that the file's byte offsets stay valid), so that the
// same data gives the same file.
var pdfDates = regexp.MustCompile(`(/(?:Creation|Mod)Date \(D:)[0-9]{14}\)`)

const fixedPDFDate = "20000101000000"

// save writes f to path atomically, in the format of its extension.
func (f figure) save(path string) error {
	b, err := f.encode(path)
	if err != nil {
		return err
	}
	return results.WriteFileAtomic(path, b)
}

// saveBoth writes f as base.png (runDPI) and base.pdf and returns the two
// paths.
func (f figure) saveBoth(base string) ([]string, error) {
	paths := []string{base + ".png", base + ".pdf"}
	for _, p := range paths {
		if err := f.save(p); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// metricRange is the range of an index or metrics column's values:
// [0, 1] for accuracies, [0, +Inf) for losses and epsilons, else the whole
// line.
func metricRange(col string) (lo, hi float64) {
	switch {
	case strings.Contains(col, "accuracy"):
		return 0, 1
	case strings.HasSuffix(col, "loss"), strings.Contains(col, "epsilon"):
		return 0, math.Inf(1)
	}
	return math.Inf(-1), math.Inf(1)
}

// clipInterval clips an interval [lo, hi] to col's range and reports
// whether it had to (NaN bounds, no interval, stay NaN).
func clipInterval(lo, hi float64, col string) (float64, float64, bool) {
	rlo, rhi := metricRange(col)
	clo, chi := math.Max(lo, rlo), math.Min(hi, rhi)
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return lo, hi, false
	}
	return clo, chi, clo != lo || chi != hi
}

// outlinePDF is a PDF canvas that draws text as filled glyph outlines and
// gives translucent colours their own colour. The PDF writer encodes text
// in code page 1252, which has no ε, δ or σ (they came out as "Îµ");
// outlines draw every glyph the font has, stay vector, and need no
// embedded font. It also takes a colour's premultiplied components as the
// colour, which darkens a translucent band to grey.
type outlinePDF struct{ *vgpdf.Canvas }

// SetColor passes the colour with its components not premultiplied by its
// alpha.
func (c outlinePDF) SetColor(clr color.Color) {
	if clr == nil {
		clr = color.Black
	}
	c.Canvas.SetColor(straightAlpha(color.NRGBAModel.Convert(clr).(color.NRGBA)))
}

// straightAlpha is a colour whose RGBA method returns the components not
// premultiplied by alpha, which is what the PDF writer expects.
type straightAlpha color.NRGBA

// RGBA implements color.Color.
func (c straightAlpha) RGBA() (r, g, b, a uint32) {
	return uint32(c.R) * 0x101, uint32(c.G) * 0x101, uint32(c.B) * 0x101, uint32(c.A) * 0x101
}

// FillString draws str's glyphs from pt (the left end of its baseline)
// with the advances and kerning that font.Face.Width measures, so that
// alignment computed from it holds.
func (c outlinePDF) FillString(f font.Face, pt vg.Point, str string) {
	if f.Font.Size == 0 || f.Face == nil {
		return
	}
	var buf sfnt.Buffer
	ppem := fixed.Int26_6(f.Face.UnitsPerEm()) // glyph coordinates in font units
	scale := float64(f.Font.Size) / float64(ppem)
	var path vg.Path
	var pen fixed.Int26_6
	var prev sfnt.GlyphIndex
	for i, r := range []rune(str) {
		idx, err := f.Face.GlyphIndex(&buf, r)
		if err != nil {
			continue
		}
		if k, err := f.Face.Kern(&buf, prev, idx, ppem, xfont.HintingNone); i > 0 && err == nil {
			pen += k
		}
		at := func(p fixed.Point26_6) vg.Point {
			return vg.Point{X: pt.X + vg.Length(float64(pen+p.X)*scale), Y: pt.Y - vg.Length(float64(p.Y)*scale)}
		}
		segs, err := f.Face.LoadGlyph(&buf, idx, ppem, nil)
		for j, sg := range segs {
			switch sg.Op {
			case sfnt.SegmentOpMoveTo:
				if j > 0 {
					path.Close()
				}
				path.Move(at(sg.Args[0]))
			case sfnt.SegmentOpLineTo:
				path.Line(at(sg.Args[0]))
			case sfnt.SegmentOpQuadTo:
				path.QuadTo(at(sg.Args[0]), at(sg.Args[1]))
			case sfnt.SegmentOpCubeTo:
				path.CubeTo(at(sg.Args[0]), at(sg.Args[1]), at(sg.Args[2]))
			}
		}
		if err == nil && len(segs) > 0 {
			path.Close()
		}
		if adv, err := f.Face.GlyphAdvance(&buf, idx, ppem, xfont.HintingNone); err == nil {
			pen += adv
		}
		prev = idx
	}
	if len(path) > 0 {
		c.Fill(path)
	}
}
