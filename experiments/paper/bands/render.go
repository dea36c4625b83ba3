package main

import (
	"fmt"
	"strings"
)

// Paper is the table of Choquette-Choo et al. 2023 App G.1: the optimal b̂
// for Epsilons (rows) and Epochs (columns).
var Paper = [][]int{
	{2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1},
	{4, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1},
	{8, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1},
	{8, 4, 4, 2, 1, 1, 1, 1, 1, 1, 1},
	{16, 8, 4, 4, 2, 1, 1, 1, 1, 1, 1},
	{32, 16, 8, 4, 2, 2, 1, 1, 1, 1, 1},
	{64, 32, 16, 8, 4, 2, 2, 1, 1, 1, 1},
	{128, 64, 32, 16, 8, 4, 2, 2, 1, 1, 1},
	{1024, 512, 256, 32, 16, 8, 4, 2, 2, 1, 1},
	{1024, 512, 256, 128, 64, 32, 8, 4, 4, 2, 1},
}

// best is the optimum of one (ε, E): the b̂ of least RMSE, the runner-up
// and the ratio of their RMSEs; ok is false while a b̂ ≤ N/E is missing,
// and then upto is the largest b̂ computed (all below it are) and bands the
// best of those.
type best struct {
	bands, second int
	ratio         float64
	ok            bool
	upto          int
}

func optimum(cells []cell, eps float64, epochs int) best {
	byBands := map[int]float64{}
	for _, c := range cells {
		if c.Epsilon == eps && c.Epochs == epochs {
			byBands[c.Bands] = c.RMSE
		}
	}
	var b best
	b.ok = true
	r1, r2 := 0.0, 0.0
	for bands := 1; bands*epochs <= N; bands *= 2 {
		r, ok := byBands[bands]
		if !ok {
			return best{bands: b.bands, upto: bands / 2}
		}
		switch {
		case b.bands == 0 || r < r1:
			b.second, r2 = b.bands, r1
			b.bands, r1 = bands, r
		case b.second == 0 || r < r2:
			b.second, r2 = bands, r
		}
	}
	if b.second != 0 {
		b.ratio = r2 / r1
	}
	return b
}

// renderTable is table.md: ours next to the paper's, cell by cell.
func renderTable(cells []cell) string {
	var s strings.Builder
	s.WriteString("Optimal b̂ (ours / paper; * marks a mismatch, runner-up and RMSE ratio in parentheses; - not computed; (x of b̂ ≤ m): the best of the band counts computed so far, not all)\n\n")
	s.WriteString("| ε \\ epochs |")
	for _, e := range Epochs {
		fmt.Fprintf(&s, " %d |", e)
	}
	s.WriteString("\n|---|" + strings.Repeat("---|", len(Epochs)) + "\n")
	match, mism, missing, near := 0, 0, 0, 0
	closest, where := 0.0, ""
	for i, eps := range Epsilons {
		fmt.Fprintf(&s, "| %g |", eps)
		for j, e := range Epochs {
			b := optimum(cells, eps, e)
			if b.ok && b.second != 0 {
				if b.ratio < 1.01 {
					near++
				}
				if closest == 0 || b.ratio < closest {
					closest, where = b.ratio, fmt.Sprintf("ε = %g, %d epochs: b̂ = %d, runner-up %d", eps, e, b.bands, b.second)
				}
			}
			switch {
			case !b.ok && b.upto == 0:
				missing++
				fmt.Fprintf(&s, " - / %d |", Paper[i][j])
			case !b.ok:
				missing++
				fmt.Fprintf(&s, " (%d of b̂ ≤ %d) / %d |", b.bands, b.upto, Paper[i][j])
			case b.bands == Paper[i][j]:
				match++
				fmt.Fprintf(&s, " %d |", b.bands)
			default:
				mism++
				fmt.Fprintf(&s, " %d* / %d (%d, %.4f) |", b.bands, Paper[i][j], b.second, b.ratio)
			}
		}
		s.WriteString("\n")
	}
	fmt.Fprintf(&s, "\n%d cells match, %d differ, %d not computed.\n", match, mism, missing)
	if where != "" {
		fmt.Fprintf(&s, "%d computed cells have a runner-up within 1%% in RMSE; the closest, %s, RMSE ratio %.4f.\n", near, where, closest)
	}
	return s.String()
}
