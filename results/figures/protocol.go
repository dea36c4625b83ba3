package figures

import (
	"fmt"
	"math"
	"strconv"

	"gonum.org/v1/gonum/stat/distuv"

	"dpfl/results"
)

// The reporting protocol that comparisons between series follow (what
// results/paper's README states and its tests enforce):
//
//   - y is reported over held-out seeds only (Summary.best): the seeds that
//     chose a point's hyperparameters are not in its mean;
//   - an ordering of two series at an x is claimed only when at least
//     MinSeeds held-out seeds of each are compared, and either a paired t
//     test over the seeds both ran (two-sided, level Alpha) or
//     non-overlapping 95% intervals separate them;
//   - everything else is "not separated", with the reason.
const (
	MinSeeds = 5
	Alpha    = 0.05
)

// Verdicts of Compare.
const (
	Above        = "above"
	Below        = "below"
	NotSeparated = "not separated"
)

// Comparison is series A against series B at X under the protocol.
type Comparison struct {
	A, B string
	X    float64
	// Paired is the number of held-out seeds both ran; MeanDiff the mean of
	// A − B over them, T and P the paired t statistic and its two-sided p
	// value (NaN for fewer than two pairs or no spread).
	Paired       int
	MeanDiff     float64
	T, P         float64
	Disjoint     bool   // the 95% intervals do not overlap
	Verdict      string // Above, Below or NotSeparated (A relative to B)
	Reason       string // why, e.g. "paired t, 5 seeds, p = 0.003" or "2 held-out seeds (need 5)"
	MeanA, MeanB float64
}

// Compare applies the protocol to a and b (points at the same x).
func Compare(a, b Point) Comparison {
	c := Comparison{A: a.Series, B: b.Series, X: a.X, MeanA: a.Mean, MeanB: b.Mean, T: math.NaN(), P: math.NaN()}
	bySeed := map[string]float64{}
	for _, v := range b.PerSeed {
		bySeed[v.Seed] = v.Y
	}
	var diffs []float64
	for _, v := range a.PerSeed {
		if y, ok := bySeed[v.Seed]; ok {
			diffs = append(diffs, v.Y-y)
		}
	}
	c.Paired = len(diffs)
	c.MeanDiff, c.T, c.P = pairedT(diffs)
	c.Disjoint = !math.IsNaN(a.CILow) && !math.IsNaN(b.CILow) && (a.CILow > b.CIHigh || b.CILow > a.CIHigh)
	c.Verdict = NotSeparated
	switch {
	case a.TunedOnReported || b.TunedOnReported:
		c.Reason = "hyperparameters chosen on the reported seeds"
	case min(a.Seeds, b.Seeds) < MinSeeds:
		c.Reason = fmt.Sprintf("%d held-out seeds (need %d)", min(a.Seeds, b.Seeds), MinSeeds)
	case c.Paired >= MinSeeds && c.P < Alpha:
		c.Verdict = sign(c.MeanDiff)
		c.Reason = fmt.Sprintf("paired t over %d seeds, p = %.2g", c.Paired, c.P)
	case c.Disjoint:
		c.Verdict = sign(a.Mean - b.Mean)
		c.Reason = "95% intervals disjoint"
	case c.Paired >= MinSeeds:
		c.Reason = fmt.Sprintf("paired t over %d seeds, p = %.2g", c.Paired, c.P)
	default:
		c.Reason = "95% intervals overlap"
	}
	return c
}

func sign(d float64) string {
	if d > 0 {
		return Above
	}
	return Below
}

// pairedT returns the mean of d, the t statistic of the paired test of
// mean 0 and its two-sided p value (NaN for fewer than two values; p = 0
// when every difference is the same non-zero value, 1 when all are zero).
func pairedT(d []float64) (mean, t, p float64) {
	n := float64(len(d))
	if len(d) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	for _, x := range d {
		mean += x / n
	}
	if len(d) < 2 {
		return mean, math.NaN(), math.NaN()
	}
	var ss float64
	for _, x := range d {
		ss += (x - mean) * (x - mean)
	}
	se := math.Sqrt(ss / (n - 1) / n)
	if se == 0 {
		if mean == 0 {
			return mean, 0, 1
		}
		return mean, math.Copysign(math.Inf(1), mean), 0
	}
	t = mean / se
	p = 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Survival(math.Abs(t))
	return mean, t, p
}

// Comparisons compares every pair of series at every x both have, A before
// B in series order.
func (s *Summary) Comparisons() []Comparison {
	at := map[float64][]Point{}
	var xs []float64
	for _, p := range s.Points {
		if at[p.X] == nil {
			xs = append(xs, p.X)
		}
		at[p.X] = append(at[p.X], p)
	}
	var out []Comparison
	for _, x := range xs {
		pts := at[x]
		for i := range pts {
			for j := i + 1; j < len(pts); j++ {
				out = append(out, Compare(pts[i], pts[j]))
			}
		}
	}
	return out
}

// ComparisonsTable is the file Write puts beside best.csv.
const ComparisonsTable = "comparisons.csv"

// WriteComparisons writes Comparisons as CSV: the series, x, paired seeds,
// mean difference, t, p, whether the intervals are disjoint, the verdict
// (A above/below B, or not separated) and its reason.
func (s *Summary) WriteComparisons(path string) error {
	xcol := s.XCol
	if s.PopulationX {
		xcol = "epsilon" // the runs' own (Summary.PopulationX)
	}
	header := []string{"a", "b", xcol, s.YCol + "_mean_a", s.YCol + "_mean_b", "paired_seeds", "mean_diff", "t", "p", "intervals_disjoint", "verdict", "reason"}
	f := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', 6, 64)
	}
	var rows [][]string
	for _, c := range s.Comparisons() {
		rows = append(rows, []string{c.A, c.B, f(c.X), f(c.MeanA), f(c.MeanB), strconv.Itoa(c.Paired), f(c.MeanDiff), f(c.T), f(c.P),
			strconv.FormatBool(c.Disjoint), c.Verdict, c.Reason})
	}
	return results.WriteCSV(path, header, rows)
}
