//go:build mpi

package main

import (
	"os"
	"strconv"

	"dpfl/mpi"
)

func mpiInit() (mpiComm, error) { return mpi.Init() }

// mpiLaunched returns the number of ranks the MPI launcher started (0:
// not launched by one): Open MPI's mpirun and Slurm's srun say so in the
// environment.
func mpiLaunched() int {
	for _, k := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"} {
		if n, err := strconv.Atoi(os.Getenv(k)); err == nil {
			return n
		}
	}
	return 0
}
