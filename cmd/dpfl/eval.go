package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"dpfl/experiments"
	"dpfl/results"
)

const evalUsage = `Usage:
  dpfl eval [flags] RUN_DIR

Evaluates the final model a completed run saved (RUN_DIR/model.safetensors) on
the test set of the run's configuration (RUN_DIR/config.yaml), or with -data on
the test set of another configuration's data section. Relative paths in the
run's config.yaml are resolved against -base (default: the current folder).
Prints the test accuracy and loss, and the accuracy the run recorded. Refuses
a folder whose files are not one run's (config.yaml and model.safetensors must
be summary.json's run's), a model file that is not the configured model
(tensors, shapes, weights that are not finite) and test data the model cannot
read.

Flags:
`

// maxEvalWorkers bounds -workers: each worker holds a model and an
// evaluation batch's activations (EvaluateRun uses no more workers than the
// test set has batches).
const maxEvalWorkers = 1024

// cmdEval evaluates a run's saved model.
func cmdEval(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	data := fs.String("data", "", "evaluate on the test set of this run configuration's data section (`CONFIG.yaml`; its relative paths resolved against its folder)")
	base := fs.String("base", ".", "`DIR` the relative paths of the run's config.yaml are resolved against")
	workers := fs.Int("workers", 1, fmt.Sprintf("evaluation goroutines, at most %d (results do not depend on it)", maxEvalWorkers))
	dirs, code, ok := parseInterleaved(fs, args, evalUsage, stderr)
	if !ok {
		return code
	}
	if len(dirs) != 1 {
		fmt.Fprintf(stderr, "dpfl eval: want exactly one RUN_DIR argument, got %d (see dpfl eval -h)\n", len(dirs))
		return exitUsage
	}
	if *workers < 1 || *workers > maxEvalWorkers {
		fmt.Fprintf(stderr, "dpfl eval: -workers %d must be between 1 and %d\n", *workers, maxEvalWorkers)
		return exitUsage
	}
	dir := dirs[0]
	if _, err := os.Stat(filepath.Join(dir, results.ModelFile)); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stderr, "dpfl eval: %s has no %s (only runs that completed save their model)\n", dir, results.ModelFile)
		return exitFailure
	}
	opts := experiments.Options{BaseDir: *base, Data: dataLoader(), Workers: *workers}
	var other *experiments.Config
	if *data != "" {
		f, _, err := results.OpenRegular(*data)
		if err != nil {
			fmt.Fprintf(stderr, "dpfl eval: -data: %v\n", err)
			return exitFailure
		}
		f.Close()
		cfg, _, err := experiments.LoadFile(*data)
		if err != nil {
			fmt.Fprintf(stderr, "dpfl eval: -data: invalid config:\n%v\n", err)
			return exitFailure
		}
		other, opts.BaseDir = cfg, filepath.Dir(*data)
	}
	ev, err := experiments.EvaluateRun(ctx, dir, other, opts)
	if err != nil {
		return failed(ctx, stderr, "eval", err)
	}
	src := "the run's test set"
	if other != nil {
		src = "the test set of " + *data
	}
	fmt.Fprintf(stdout, "model %s (%s) on %s (%s, %d examples): test accuracy %.4f, test loss %.4f\n",
		filepath.Join(dir, results.ModelFile), ev.Config.Model.Kind, src, ev.Config.Data.Dataset, ev.Examples, ev.Accuracy, ev.Loss)
	fmt.Fprintf(stdout, "the run recorded final test accuracy %.4f, test loss %.4f\n", ev.Summary.FinalAccuracy, ev.Summary.FinalTestLoss)
	return exitOK
}
