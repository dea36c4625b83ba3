// Package mpi is a thin binding to an MPI library (Open MPI from Debian's
// packages openmpi-bin and libopenmpi-dev), compiled only with the build
// tag mpi: the default build of dpfl is pure Go and needs no system
// library. With the tag, Init starts MPI and returns the world
// communicator, a sim.Comm: its rank and size, an allreduce that adds
// 128-bit integers given as (lo, hi) pairs of uint64 words (a commutative
// user operation, so the sum is exact and order-free whatever the
// reduction tree), a broadcast from rank 0, a barrier, Finalize and Abort.
// Errors are returned (MPI_ERRORS_RETURN), not fatal in the library.
//
// A rank that dies (killed, or ended by Abort) ends the job: mpirun then
// stops the other ranks (srun as the launcher, untested, would need
// --kill-on-bad-exit=1).
package mpi
