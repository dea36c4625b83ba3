package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"

	"dpfl/experiments"
	"dpfl/results"
	"dpfl/sim"
)

// mpiComm is the MPI world of a dpfl built with -tags mpi (package mpi).
type mpiComm interface {
	sim.Comm
	// End finalizes MPI, or aborts the job with the exit code (abort).
	End(code int, abort bool) error
}

// runMPI is dpfl run -mpi: this process is one rank of the run. Rank 0
// runs it as dpfl run does (run folder, checkpoints, output); the others
// follow (experiments.Follow) and print only their errors. Ranks with
// another executable or configuration than rank 0's are refused at the
// start, on every rank. An error once training started aborts the job
// (MPI_Abort: the other ranks would wait in a collective); a rank that dies
// ends the job through the launcher.
func runMPI(ctx context.Context, cfg *experiments.Config, opts experiments.Options, bar *runBar, stdout, stderr io.Writer) int {
	comm, err := mpiInit()
	if err != nil {
		fmt.Fprintf(stderr, "dpfl run: -mpi: %v\n", err)
		return exitFailure
	}
	opts.Comm = comm
	code, inSync := runRank(ctx, comm, cfg, opts, bar, stdout, stderr)
	if err := comm.End(code, code != exitOK && !inSync); err != nil {
		fmt.Fprintf(stderr, "dpfl run: rank %d: %v\n", comm.Rank(), err)
		return exitFailure
	}
	return code
}

// runRank runs this rank's part; inSync reports whether every rank reached
// the same point (a failure every rank saw), so that MPI can end normally.
func runRank(ctx context.Context, comm mpiComm, cfg *experiments.Config, opts experiments.Options, bar *runBar, stdout, stderr io.Writer) (code int, inSync bool) {
	if err := sameEverywhere(ctx, comm, cfg, opts); err != nil {
		if comm.Rank() == 0 {
			fmt.Fprintf(stderr, "dpfl run: -mpi: %v\n", err)
		}
		return exitFailure, true
	}
	if comm.Rank() != 0 {
		opts.AfterRound, opts.Log = nil, nil
		if err := experiments.Follow(ctx, cfg, opts); err != nil {
			fmt.Fprintf(stderr, "dpfl run: rank %d of %d: %s\n", comm.Rank(), comm.Size(), oneLine(err))
			return exitFailure, false
		}
		return exitOK, true
	}
	res, err := experiments.Run(ctx, cfg, opts)
	bar.finish()
	if err != nil {
		return failed(ctx, stderr, "run", err), false
	}
	fmt.Fprintf(stdout, "trained on %d MPI ranks\n", comm.Size())
	return printRun(res, stdout, stderr), true
}

// sameEverywhere checks that every rank runs rank 0's executable (its
// SHA-256) and configuration with the same input files (the run ID).
func sameEverywhere(ctx context.Context, comm mpiComm, cfg *experiments.Config, opts experiments.Options) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	bin, err := results.ReadFileMax(exe, 1<<31)
	if err != nil {
		return fmt.Errorf("reading this executable to compare it across ranks: %w", err)
	}
	bad, err := sim.Mismatched(comm, sha256.Sum256(bin))
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("rank(s) %v run another dpfl executable than rank 0 (its SHA-256 differs): start every rank with the same build", bad)
	}
	in, err := experiments.FingerprintContext(ctx, cfg, opts)
	if err != nil {
		return err
	}
	id := experiments.RunID(cfg, in)
	if bad, err = sim.Mismatched(comm, sha256.Sum256([]byte(id))); err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("rank(s) %v have another configuration or other input files than rank 0 (run ID %s): give every rank the same config and data", bad, id)
	}
	return nil
}
