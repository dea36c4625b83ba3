package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"dpfl/aggregators/strategy"
)

// paper2 is one row of Choquette-Choo et al. 2023 Table 2 as printed: the
// sensitivities normalized to 1 under (k,b), the RMSEs relative to the
// multi-epoch MF (F) RMSE under (k,b).
type paper2 struct {
	Mechanism  string
	Bands      string
	EqualNorms string
	Raw        string // raw file stem: t2-<Raw>-kb.json, t2-<Raw>-minsep.json
	Single     float64
	KB         float64
	MinSep     float64
	RMSEKB     float64
	RMSEMinSep float64
}

var table2Paper = []paper2{
	{"Optimal TreeAgg", "–", "F", "tree", 0.32, 1.00, 1.00, 1.53, 1.53},
	{"DP-SGD", "1", "T", "sgd", 0.41, 1.00, 1.00, 9.63, 9.63},
	{"MF (BandMF)", "128", "F", "bandmf128-F", 0.52, 1.00, 1.04, 1.23, 1.29},
	{"MF (BandMF)", "128", "T", "bandmf128-T", 0.41, 1.00, 1.00, 1.27, 1.27},
	{"MF (BandMF)", "342", "F", "bandmf342-F", 0.52, 1.00, 1.04, 1.04, 1.08},
	{"MF (BandMF)", "342", "T", "bandmf342-T", 0.41, 1.00, 1.00, 1.05, 1.05},
	{"Multi-epoch MF", "–", "F", "me-F", 0.50, 1.00, 1.15, 1.00, 1.15},
	{"Multi-epoch MF", "–", "T", "me-T", 0.41, 1.00, 1.13, 1.01, 1.14},
}

// normalizerRaw is the row the paper's RMSE columns are relative to.
const normalizerRaw = "me-F"

// Tolerance of the agreement statement: the paper prints 2 decimals, so a
// value that rounds to the printed one is within 0.005.
const roundingTol = 0.005

// Table2Row is one row of table2.json.
type Table2Row struct {
	Mechanism  string `json:"mechanism"`
	Bands      string `json:"bands"`
	EqualNorms string `json:"equal_col_norms"`
	// Computed is false when raw/ lacks the row (optimization not run); its
	// figures are then zero.
	Computed bool `json:"computed"`
	// Paper and Ours hold sens single, sens (k,b), sens min-sep (normalized to
	// sens (k,b) = 1), RMSE (k,b) and RMSE min-sep relative to the
	// multi-epoch MF (F) RMSE under (k,b), in this order.
	Paper [5]float64 `json:"paper"`
	Ours  [5]float64 `json:"ours"`
	Diff  [5]float64 `json:"diff"`
	// Absolute figures (σ = 1, clip 1, sensitivities not normalized).
	SensSingle      float64 `json:"abs_sens_single"`
	SensKB          float64 `json:"abs_sens_kb"`
	SensMinSep      float64 `json:"abs_sens_minsep"`
	SensMinSepExact bool    `json:"sens_minsep_exact"`
	RMSEKB          float64 `json:"abs_rmse_kb"`
	RMSEMinSep      float64 `json:"abs_rmse_minsep"`
	Optimizer       string  `json:"optimizer,omitempty"`
	Converged       bool    `json:"converged"`
	Seconds         float64 `json:"seconds"` // wall time of the (k,b) call (the optimization) where it ran
}

// fallbackNormalizer is the multi-epoch MF (F) RMSE implied by the paper's
// DP-SGD and TreeAgg rows (their absolute RMSEs over the printed ratios), used only while our
// multi-epoch-f row is missing.
const fallbackNormalizer = 8.15

// Columns of Table 2.
var table2Cols = [5]string{"sens single", "sens (k,b)", "sens min-sep", "RMSE (k,b)", "RMSE min-sep"}

// Seed000Row is one strategy of one configuration of the comparison of
// Denisov et al. 2022 (file seed000.json).
type Seed000Row struct {
	Config      string   `json:"config"`
	Strategy    string   `json:"strategy"`
	Loss        float64  `json:"loss"`
	RMSE        float64  `json:"rmse"`
	MaxRoundStd float64  `json:"max_round_std"`
	RefLoss     *float64 `json:"reference_loss,omitempty"` // independent implementation
	RelDiff     *float64 `json:"relative_difference,omitempty"`
	RatioToOpt  float64  `json:"loss_ratio_to_optimal"`
}

// seed000Configs are the raw files of the Denisov et al. 2022 comparison and the
// reference losses computed by an independent implementation (single
// participation, σ = 1; the optimal n = 2048 loss has no reference).
var seed000Configs = []struct {
	Raw, Title string
	Ref        map[string]float64
}{
	{"s0-prefix-256", "prefix sums, n = 256", map[string]float64{
		"identity": 32896, "tree": 9225, "tree-online": 5535.7123, "tree-full": 2463.7123, "optimal": 1631.403045}},
	{"s0-momentum-256", "momentum β = 0.9, η ≡ 1, n = 256", map[string]float64{
		"identity": 2952319.391, "tree-online": 274030.331, "tree-full": 122937.084, "optimal": 65567.194}},
	{"s0-prefix-2048", "prefix sums, n = 2048", map[string]float64{
		"identity": 2098176, "tree": 135180, "tree-online": 77458.5360, "tree-full": 32402.5360}},
}

// seed000Strategies are the rows shown (Denisov et al. 2022 Table 1 and the vanilla tree).
var seed000Strategies = []string{"identity", "tree", "tree-online", "tree-full", "optimal"}

var seed000Labels = map[string]string{
	"identity":    "DP-SGD (identity)",
	"tree":        "tree, vanilla estimator",
	"tree-online": "Honaker online (= DP-FTRLM)",
	"tree-full":   "Honaker full",
	"optimal":     "optimal MF (fixed point)",
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func readTimings(path string) (map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t := map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s: bad line %q", path, sc.Text())
		}
		v, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		t[fields[0]] = v
	}
	return t, sc.Err()
}

// buildTable2 reads the Table 2 raw files; rows whose files are missing come
// back with Computed false. It also returns the normalizer and whether it is
// ours.
func buildTable2(raw string, times map[string]float64) ([]Table2Row, float64, bool, error) {
	load := func(stem, part string) (strategy.Report, error) {
		var m strategy.Report
		if err := readJSON(filepath.Join(raw, "t2-"+stem+"-"+part+".json"), &m); err != nil {
			return m, err
		}
		if m.Error != "" {
			return m, fmt.Errorf("t2-%s-%s: %s", stem, part, m.Error)
		}
		return m, nil
	}
	missing := func(stem string) bool {
		for _, part := range []string{"kb", "minsep"} {
			if _, err := os.Stat(filepath.Join(raw, "t2-"+stem+"-"+part+".json")); err != nil {
				return true
			}
		}
		return false
	}
	normRMSE, ours := fallbackNormalizer, false
	if !missing(normalizerRaw) {
		norm, err := load(normalizerRaw, "kb")
		if err != nil {
			return nil, 0, false, err
		}
		normRMSE, ours = norm.RMSE, true
	}
	var rows []Table2Row
	for _, p := range table2Paper {
		if missing(p.Raw) {
			rows = append(rows, Table2Row{Mechanism: p.Mechanism, Bands: p.Bands, EqualNorms: p.EqualNorms,
				Paper: [5]float64{p.Single, p.KB, p.MinSep, p.RMSEKB, p.RMSEMinSep}})
			continue
		}
		kb, err := load(p.Raw, "kb")
		if err != nil {
			return nil, 0, false, err
		}
		ms, err := load(p.Raw, "minsep")
		if err != nil {
			return nil, 0, false, err
		}
		r := Table2Row{Computed: true,
			Mechanism: p.Mechanism, Bands: p.Bands, EqualNorms: p.EqualNorms,
			Paper:      [5]float64{p.Single, p.KB, p.MinSep, p.RMSEKB, p.RMSEMinSep},
			SensSingle: kb.SensitivitySingle, SensKB: kb.Sensitivity, SensMinSep: ms.Sensitivity,
			SensMinSepExact: ms.SensitivityExact, RMSEKB: kb.RMSE, RMSEMinSep: ms.RMSE,
			Converged: true, Seconds: times["t2-"+p.Raw+"-kb"],
		}
		r.Ours = [5]float64{kb.SensitivitySingle / kb.Sensitivity, 1, ms.Sensitivity / kb.Sensitivity,
			kb.RMSE / normRMSE, ms.RMSE / normRMSE}
		for i := range r.Diff {
			r.Diff[i] = r.Ours[i] - r.Paper[i]
		}
		if o := kb.Optimizer; o != nil {
			r.Optimizer = fmt.Sprintf("%s, %d iterations, %d evaluations", o.Method, o.Iterations, o.Evals)
			r.Converged = o.Converged
		}
		rows = append(rows, r)
	}
	return rows, normRMSE, ours, nil
}

func buildSeed000(raw string) ([]Seed000Row, error) {
	var rows []Seed000Row
	for _, c := range seed000Configs {
		var ms []strategy.Report
		if err := readJSON(filepath.Join(raw, c.Raw+".json"), &ms); err != nil {
			return nil, err
		}
		by := map[string]strategy.Report{}
		for _, m := range ms {
			by[m.Strategy] = m
		}
		opt, ok := by["optimal"]
		if !ok || opt.Error != "" {
			return nil, fmt.Errorf("%s: no optimal row", c.Raw)
		}
		for _, s := range seed000Strategies {
			m, ok := by[s]
			if !ok || m.Error != "" {
				return nil, fmt.Errorf("%s: no %s row", c.Raw, s)
			}
			r := Seed000Row{Config: c.Title, Strategy: s, Loss: m.Loss, RMSE: m.RMSE, MaxRoundStd: m.MaxRoundStd, RatioToOpt: m.Loss / opt.Loss}
			if ref, ok := c.Ref[s]; ok {
				d := (m.Loss - ref) / ref
				r.RefLoss, r.RelDiff = &ref, &d
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

func f2(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
func f3(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

func signed3(x float64) string {
	if math.Abs(x) < 5e-4 {
		x = 0 // no "-0.000"
	}
	return fmt.Sprintf("%+.3f", x)
}

// table2Markdown is the paper-vs-ours table (paper / ours / difference per
// column) and the absolute figures.
func table2Markdown(rows []Table2Row) string {
	var b strings.Builder
	b.WriteString("| mechanism | bands | equal col norms |")
	for _, c := range table2Cols {
		fmt.Fprintf(&b, " %s: paper / ours / diff |", c)
	}
	b.WriteString("\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s |", r.Mechanism, r.Bands, r.EqualNorms)
		if !r.Computed {
			for i := range r.Paper {
				fmt.Fprintf(&b, " %s / not computed / – |", f2(r.Paper[i]))
			}
			b.WriteString("\n")
			continue
		}
		for i := range r.Paper {
			mark := ""
			if math.Abs(r.Diff[i]) > roundingTol+1e-12 {
				mark = " ⚠"
			}
			fmt.Fprintf(&b, " %s / %s / %s%s |", f2(r.Paper[i]), f3(r.Ours[i]), signed3(r.Diff[i]), mark)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nAbsolute figures (σ = 1, clip 1; loss = sens²·‖B‖²_F, RMSE = sqrt(loss/n)):\n\n")
	b.WriteString("| mechanism | bands | equal col norms | sens single | sens (k,b) | sens min-sep | RMSE (k,b) | RMSE min-sep | optimizer | (k,b) call, s |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		if !r.Computed {
			fmt.Fprintf(&b, "| %s | %s | %s | not computed | | | | | | |\n", r.Mechanism, r.Bands, r.EqualNorms)
			continue
		}
		ex := ""
		if !r.SensMinSepExact {
			ex = " (bound)"
		}
		opt := r.Optimizer
		if opt == "" {
			opt = "closed form"
		}
		if !r.Converged {
			opt += ", NOT converged"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.4f | %.4f | %.4f%s | %.4f | %.4f | %s | %.0f |\n", r.Mechanism, r.Bands, r.EqualNorms,
			r.SensSingle, r.SensKB, r.SensMinSep, ex, r.RMSEKB, r.RMSEMinSep, opt, r.Seconds)
	}
	return b.String()
}

func table2CSV(rows []Table2Row) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	head := []string{"mechanism", "bands", "equal_col_norms"}
	for _, c := range []string{"sens_single", "sens_kb", "sens_minsep", "rmse_kb", "rmse_minsep"} {
		head = append(head, c+"_paper", c+"_ours", c+"_diff")
	}
	head = append(head, "abs_sens_single", "abs_sens_kb", "abs_sens_minsep", "abs_rmse_kb", "abs_rmse_minsep", "converged", "seconds")
	if err := w.Write(head); err != nil {
		return nil, err
	}
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 10, 64) }
	for _, r := range rows {
		if !r.Computed {
			continue
		}
		rec := []string{r.Mechanism, r.Bands, r.EqualNorms}
		for i := range r.Paper {
			rec = append(rec, f2(r.Paper[i]), g(r.Ours[i]), g(r.Diff[i]))
		}
		rec = append(rec, g(r.SensSingle), g(r.SensKB), g(r.SensMinSep), g(r.RMSEKB), g(r.RMSEMinSep), strconv.FormatBool(r.Converged), strconv.FormatFloat(r.Seconds, 'f', 1, 64))
		if err := w.Write(rec); err != nil {
			return nil, err
		}
	}
	w.Flush()
	return buf.Bytes(), w.Error()
}

func seed000Markdown(rows []Seed000Row) string {
	var b strings.Builder
	cur := ""
	for _, r := range rows {
		if r.Config != cur {
			cur = r.Config
			fmt.Fprintf(&b, "\n**%s** (single participation, sensitivity 1 per strategy as in Denisov et al. 2022, σ = 1)\n\n", cur)
			b.WriteString("| strategy | loss (ours) | reference (independent) | rel. diff | RMSE | worst round std | loss / optimal |\n|---|---|---|---|---|---|---|\n")
		}
		ref, rd := "–", "–"
		if r.RefLoss != nil {
			ref = strconv.FormatFloat(*r.RefLoss, 'f', -1, 64)
			rd = fmt.Sprintf("%+.1e", *r.RelDiff)
		}
		fmt.Fprintf(&b, "| %s | %.3f | %s | %s | %.4f | %.4f | %.3f |\n", seed000Labels[r.Strategy], r.Loss, ref, rd, r.RMSE, r.MaxRoundStd, r.RatioToOpt)
	}
	return b.String()
}

// agreement summarizes Table 2: how many cells round to the printed value.
func agreement(rows []Table2Row) (within, total int, worst float64, where string) {
	for _, r := range rows {
		if !r.Computed {
			continue
		}
		for i, d := range r.Diff {
			total++
			if math.Abs(d) <= roundingTol+1e-12 {
				within++
			}
			if math.Abs(d) > math.Abs(worst) {
				worst = d
				where = fmt.Sprintf("%s %s %s, %s", r.Mechanism, r.Bands, r.EqualNorms, table2Cols[i])
			}
		}
	}
	return
}

// render builds every output file from the raw directory.
func render(raw string) (map[string][]byte, error) {
	times, err := readTimings(filepath.Join(raw, "timings.tsv"))
	if err != nil {
		return nil, err
	}
	t2, norm, normOurs, err := buildTable2(raw, times)
	if err != nil {
		return nil, err
	}
	s0, err := buildSeed000(raw)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	js, err := json.MarshalIndent(t2, "", "  ")
	if err != nil {
		return nil, err
	}
	files["table2.json"] = append(js, '\n')
	if files["table2.csv"], err = table2CSV(t2); err != nil {
		return nil, err
	}
	t2md := table2Markdown(t2) + normNote(norm, normOurs)
	files["table2.md"] = []byte("# Choquette-Choo et al. 2023 Table 2: paper vs ours\n\n" + table2Intro + "\n" + t2md)
	js, err = json.MarshalIndent(s0, "", "  ")
	if err != nil {
		return nil, err
	}
	files["seed000.json"] = append(js, '\n')
	s0md := seed000Markdown(s0)
	files["seed000.md"] = []byte("# Denisov et al. 2022: optimal factorization vs tree estimators\n\n" + seed000Intro + s0md)
	files["README.md"] = []byte(readme(t2, t2md, s0md, times))
	return files, nil
}

const table2Intro = `n = 2052 rounds, (k,b) = (6,342)-participation and 342-min-sep with at most 6
participations, prefix-sum workload. As in the paper, every matrix is normalized to
sensitivity 1 under (k,b) (so "sens (k,b)" is 1 by construction), and the RMSE columns are
relative to the RMSE of Multi-epoch MF (F) under (k,b) (ours: our multi-epoch-f; the paper's
value is ≈ 8.15 in absolute terms, implied by its DP-SGD and TreeAgg rows). The paper prints 2 decimals; ⚠ marks a
difference larger than the rounding (0.005).
`

const seed000Intro = `Denisov et al. 2022 Table 1 / Fig. 1 (no training): the optimal dense factorization (fixed point,
relative gap 1e-6) against the binary-tree estimators, single participation, every strategy
at sensitivity 1. Shape to reproduce (the paper's Fig. 1 and Table 1): optimal MF lower than
Honaker full, lower than Honaker online, for prefix sums and for the momentum workload.
The references are losses computed by an independent implementation (float64)
(3–4 decimals; the optimal momentum value is itself converged to ≈ 1e-6; none for the
optimal loss at n = 2048).
`

// normNote states the normalizer of the relative RMSE columns.
func normNote(norm float64, ours bool) string {
	if ours {
		return fmt.Sprintf("\nNormalizer: our Multi-epoch MF (F) RMSE under (k,b) = %.4f (paper ≈ 8.15).\n", norm)
	}
	return fmt.Sprintf("\nNormalizer: %.2f, the paper's Multi-epoch MF (F) RMSE inferred from its DP-SGD and TreeAgg rows (our multi-epoch-f row is not computed).\n", norm)
}

func readme(t2 []Table2Row, t2md, s0md string, times map[string]float64) string {
	var b strings.Builder
	b.WriteString(`# Mechanism tables of the papers (no training)

The papers: Denisov, McMahan, Rush, Smith and Thakurta (2022), "Improved Differential Privacy
for SGD via Optimal Private Linear Operators on Adaptive Streams", NeurIPS 2022,
arXiv:2202.08312 (Denisov et al. 2022); Choquette-Choo, Ganesh, McKenna, McMahan, Rush,
Thakurta and Xu (2023), "(Amplified) Banded Matrix Factorization: A unified approach to private
training", NeurIPS 2023, arXiv:2306.08153 (Choquette-Choo et al. 2023).

Regenerate everything in this folder (from the repository root):

    experiments/paper/mechanisms.sh

It calls ` + "`dpfl mechanism -json`" + ` once per mechanism and schema (raw outputs, their stderr
and wall times in ` + "`raw/`" + `) and renders the tables with
` + "`go run ./experiments/paper/mechanisms`" + `. Optimized strategies are cached in
` + "`$DPFL_CACHE`" + ` (default: the dpfl user cache), so a rerun takes seconds; dpfl is built in
pure Go (` + "`DPFL_TAGS=lapack`" + ` builds it with LAPACK/OpenBLAS: same numbers to the optimizer
tolerance). The multi-epoch MF goes through its Lagrange dual (seconds).
` + "`go test ./experiments/paper/mechanisms/`" + ` re-renders the committed raw files, compares them
with the committed tables and checks the orderings the papers report.

Files: ` + "`table2.{md,csv,json}`" + ` (Choquette-Choo et al. 2023 Table 2), ` + "`seed000.{md,json}`" + ` (Denisov et al. 2022), ` + "`raw/`" + `.

`)
	total, partial := times["total"], false
	if _, ok := times["total"]; !ok {
		partial = true
		// Sum in key order: map order would change the last bits and,
		// on a .5 total, the printed rounding.
		for _, k := range slices.Sorted(maps.Keys(times)) {
			total += times[k]
		}
	}
	fmt.Fprintf(&b, "Wall time of the regeneration that produced `raw/` on 2 cores, summed over its calls (the script\nresumes, keeping finished calls and their first-run times, so the sum mixes runs made under\ndifferent machine loads): **%.0f s** (%.1f min)", total, total/60)
	if partial {
		b.WriteString(" so far (the run had not finished when these files were rendered: rows marked \"not computed\")")
	}
	b.WriteString(", of which\n")
	for _, r := range t2 {
		if !r.Computed {
			fmt.Fprintf(&b, "%s %s %s not computed, ", r.Mechanism, r.Bands, r.EqualNorms)
		} else if r.Seconds >= 30 {
			fmt.Fprintf(&b, "%s %s %s %.0f s, ", r.Mechanism, r.Bands, r.EqualNorms, r.Seconds)
		}
	}
	b.WriteString("and every other call under 30 s (`raw/timings.tsv` lists them all).\n\n")
	within, cells, worst, where := agreement(t2)
	b.WriteString("## Choquette-Choo et al. 2023 Table 2 (n = 2052, k = 6, b = 342)\n\n")
	b.WriteString(table2Intro + "\n" + t2md + "\n")
	fmt.Fprintf(&b, "Agreement: %d of %d cells round to the printed value (|ours − paper| ≤ 0.005); the largest difference is %s (%s).\n", within, cells, signed3(worst), where)
	b.WriteString(`
` + "`go test ./experiments/paper/mechanisms/`" + ` checks on the committed files the orderings the
paper reports, for the rows computed: DP-SGD ≫ Optimal TreeAgg > BandMF 128 > BandMF 342 >
Multi-epoch MF under (k,b) (F and T each); F (unequal column norms) below T under (k,b), T
below F under min-sep for BandMF; BandMF 342 T below both multi-epoch matrices under min-sep
(whose min-sep sensitivity is the Thm 3 upper bound); every cell within 0.01 of the printed
value (rounding 0.005 plus 0.005 for the optimized normalizer).

What "F" is: the diagonal of X is free subject to Σ_{j ≡ i (mod b)} X_jj = ⌈n/b⌉ for every
residue i (Choquette-Choo et al. 2023 App. B, Prop. B.1: the exact (k,b) sensitivity² of a matrix whose pattern
blocks are diagonal), optimized with the diagonal gradient projected to zero sum per pattern
(BandMF) or through the dual with the diagonal updated as the multipliers say (multi-epoch);
"T" is diag(X) = 1 (equal column norms). Strategies ` + "`bandmf-f`" + ` and ` + "`multi-epoch-f`" + ` of
` + "`dpfl mechanism`" + `.
`)
	b.WriteString("\n## Denisov et al. 2022: optimal factorization vs the tree estimators\n\n" + seed000Intro + s0md)
	b.WriteString(`
` + "`go test ./experiments/paper/mechanisms/`" + ` checks on the committed files that optimal <
Honaker full < Honaker online < vanilla tree < identity in every configuration (the Denisov et al. 2022
Table 1 / Fig. 1 ordering) and that every loss with a reference is within 1e-6 (relative)
of it. Momentum at n = 2048 is left out to keep the regeneration short: the
momentum workload has no O(n²) fixed-point path, so each of its ≈ 40 iterations is a dense
n = 2048 eigendecomposition (seconds with LAPACK, over a minute in pure Go).
`)
	return b.String()
}
