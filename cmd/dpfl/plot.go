package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"dpfl/results/figures"
)

const plotUsage = `Usage:
  dpfl plot [flags] RESULTS_DIR
  dpfl plot RUN_DIR

Given a run folder (summary.json, metrics.csv), draws its learning curve
(test accuracy and loss against round) into RUN_DIR/run_learning_curve.png,
epsilon against round (labelled with its accountant and delta) into
run_epsilon.png, and, with a participation.json, the number of clients
against their participations into run_participation.png; each also as a PDF
(.pdf), the PNGs at 300 dpi. A run with audit.canaries also gets the
histograms of the inserted and held-out canaries' statistics for each threat
model in audit_final-model and audit_every-round (.png and .pdf as well).

Plots a grid's results (RESULTS_DIR/index.csv, written by dpfl grid): y
against x with one series per -by value. Each point takes the hyperparameters
(the varied keys other than x, the series and seed) with the best mean y over
seeds, and shows the mean and its 95% t interval over seeds; non-private runs
appear as dashed lines. Without -o it (re)writes RESULTS_DIR's
accuracy_vs_epsilon and accuracy_vs_round (test accuracy by round, one panel
per x value), each as .png (300 dpi) and .pdf, best.csv, report.html (the
figures embedded, so the page stands alone) and rounds.csv (every finished
run's evaluated rounds with its index values, one pandas.read_csv away).

Columns: a fixed column of index.csv (epsilon, accuracy = final_accuracy,
best = best_accuracy, loss, aggregator = aggregator.kind, seed, sigma, ...) or a varied key
(server.lr, or just lr).

Flags:
`

// cmdPlot draws a grid's figures.
func cmdPlot(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plot", flag.ContinueOnError)
	x := fs.String("x", "epsilon", "x axis `column`")
	y := fs.String("y", "accuracy", "y axis `column`")
	by := fs.String("by", "aggregator", "series `column`")
	sel := fs.String("select", "", "`column` the hyperparameters are chosen on (default: validation, final_val_accuracy, when the runs have it and y is accuracy; else y)")
	out := fs.String("o", "", "write only this `figure` (.png, .svg or .pdf) of y against x")
	dirs, code, ok := parseInterleaved(fs, args, plotUsage, stderr)
	if !ok {
		return code
	}
	if len(dirs) != 1 {
		fmt.Fprintln(stderr, "dpfl plot: want exactly one RESULTS_DIR argument")
		return exitUsage
	}
	if (figures.IsRun(dirs[0]) || figures.HasAudit(dirs[0])) && !hasIndex(dirs[0]) {
		if *out != "" {
			fmt.Fprintln(stderr, "dpfl plot: -o is for a grid's folder; a run folder's figures are written into it")
			return exitUsage
		}
		paths, err := runFigures(dirs[0])
		if err != nil {
			fmt.Fprintf(stderr, "dpfl plot: %v\n", oneLine(err))
			return exitFailure
		}
		fmt.Fprintln(stdout, strings.Join(paths, "\n"))
		return exitOK
	}
	o := figures.Options{X: *x, Y: *y, By: *by, Select: *sel}
	if *out != "" {
		switch strings.ToLower(filepath.Ext(*out)) {
		case ".png", ".svg", ".pdf":
		default:
			fmt.Fprintf(stderr, "dpfl plot: -o %s: want a .png, .svg or .pdf file\n", *out)
			return exitUsage
		}
		s, err := figures.Summarize(dirs[0], o)
		if err == nil {
			err = s.PlotX(*out)
		}
		if err != nil {
			fmt.Fprintf(stderr, "dpfl plot: %v\n", oneLine(err))
			return exitFailure
		}
		fmt.Fprintln(stdout, *out)
		return exitOK
	}
	paths, err := figures.Write(dirs[0], o)
	if err != nil {
		fmt.Fprintf(stderr, "dpfl plot: %v\n", oneLine(err))
		return exitFailure
	}
	fmt.Fprintln(stdout, strings.Join(paths, "\n"))
	return exitOK
}

// runFigures draws a run folder's figures: its learning curve, ε and
// participation figures when it has a metrics.csv, and its canary
// histograms when it has an audit.json.
func runFigures(dir string) ([]string, error) {
	if figures.IsRun(dir) {
		return figures.WriteRun(dir)
	}
	return figures.WriteAudit(dir)
}

// hasIndex reports whether dir holds a grid's index.csv.
func hasIndex(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "index.csv"))
	return err == nil
}
