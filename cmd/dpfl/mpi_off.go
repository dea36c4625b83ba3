//go:build !mpi

package main

import "errors"

func mpiInit() (mpiComm, error) {
	return nil, errors.New("this dpfl was built without MPI: build it with go build -tags mpi ./cmd/dpfl (needs Open MPI: apt-get install openmpi-bin libopenmpi-dev)")
}

// mpiLaunched is 0: a dpfl built without MPI runs alone.
func mpiLaunched() int { return 0 }
