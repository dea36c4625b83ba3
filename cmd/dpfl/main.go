// Command dpfl is the dpfl simulator's one binary: it runs experiments, sweeps
// grids, and answers privacy and mechanism questions offline.
//
// Usage:
//
//	dpfl <command> [flags] [args]
//	dpfl help [command]
//
// main only parses and dispatches; every subcommand is a function in the
// commands table taking its arguments and output streams and returning the exit
// code: 0 success, 1 the work failed (one-line reason on stderr), 2 usage error,
// 130/143 stopped by SIGINT/SIGTERM (every phase stops within about a second;
// main prints one line saying what was kept: run and grid resume training
// from their checkpoints, mechanism keeps the strategies it finished).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"sync/atomic"
	"syscall"
	"time"
)

// command is one subcommand of dpfl.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
	// kept says, after a stop by a signal, what of the work was kept
	// (main prints it after "stopped by SIGTERM; "); empty: nothing.
	kept string
}

// Stop notices. Only training and finished strategies are kept: an L-BFGS
// or fixed-point optimization that a signal interrupts starts over.
const (
	keptTraining   = "rerun the same command to continue from the last checkpoint (an interrupted strategy optimization starts over)"
	keptStrategies = "the strategies optimized before the stop are cached; a rerun starts the interrupted one over"
)

// commands is the dispatch table; keep it sorted by name.
var commands = []command{
	{"account", "privacy accounting: epsilon for a config or a mechanism, or sigma for a target epsilon", cmdAccount, ""},
	{"data", "partition statistics of a federated dataset, with a histogram plot", cmdData, ""},
	{"eval", "evaluate a completed run's saved model (model.safetensors) on a test set", cmdEval, ""},
	{"grid", "run an experiment grid (resumable, shardable) and plot accuracy vs epsilon", cmdGrid, keptTraining},
	{"mechanism", "offline comparison of noise strategies: sensitivity, expected error, cost", cmdMechanism, keptStrategies},
	{"plot", "plot a grid's results (accuracy vs epsilon, vs round) or one run's figures", cmdPlot, ""},
	{"run", "train one experiment from a YAML config and write its results", cmdRun, keptTraining},
}

// Exit codes. A command stopped by SIGINT or SIGTERM exits with 128 plus the
// signal's number (130, 143), as shells report it.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitInterrupted = 130
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var got atomic.Value // the first signal
	go func() {
		s := <-sigs
		got.Store(s)
		cancel() // every phase watches ctx and saves what it has
		// A second signal, or a stop that takes too long, ends at once.
		select {
		case <-sigs:
		case <-time.After(30 * time.Second):
		}
		fmt.Fprintf(os.Stderr, "dpfl: %s: exiting without waiting\n", signalName(s))
		os.Exit(signalCode(s))
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if s, ok := got.Load().(os.Signal); ok {
		fmt.Fprintln(os.Stderr, stopNotice(os.Args[1:], signalName(s)))
		code = signalCode(s)
	}
	os.Exit(code)
}

// stopNotice is main's one line after a stop by the signal named sig: what
// the command of args kept.
func stopNotice(args []string, sig string) string {
	line := "dpfl: stopped by " + sig
	if len(args) > 0 {
		if c := lookup(args[0]); c != nil && c.kept != "" {
			line += "; " + c.kept
		}
	}
	return line
}

func signalCode(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return exitInterrupted
}

func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if c := lookup(args[1]); c != nil {
				return c.run(ctx, []string{"-h"}, stdout, stderr)
			}
			fmt.Fprintf(stderr, "dpfl help: unknown command %q\n", args[1])
			return exitUsage
		}
		usage(stdout)
		return exitOK
	}
	c := lookup(name)
	if c == nil {
		fmt.Fprintf(stderr, "dpfl: unknown command %q\n", name)
		usage(stderr)
		return exitUsage
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "dpfl: a simulator for federated learning with differentially private aggregators")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage:")
	fmt.Fprintln(w, "  dpfl <command> [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	cs := append([]command(nil), commands...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	for _, c := range cs {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'dpfl <command> -h' for the flags of a command.")
}
