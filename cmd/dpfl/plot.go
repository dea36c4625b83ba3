package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"dpfl/results/figures"
)

const plotUsage = `Usage:
  dpfl plot [flags] RESULTS_DIR

Plots a grid's results (RESULTS_DIR/index.csv, written by dpfl grid): y
against x with one series per -by value. Each point takes the hyperparameters
(the varied keys other than x, the series and seed) with the best mean y over
seeds, and shows the mean and the range over seeds; non-private runs appear as
dashed lines. Without -o it (re)writes RESULTS_DIR's accuracy_vs_epsilon.png,
accuracy_vs_round.png, best.csv and report.html.

Columns: a fixed column of index.csv (epsilon, accuracy = final_accuracy,
best = best_accuracy, loss, aggregator, seed, sigma, ...) or a varied key
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
