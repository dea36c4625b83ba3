//go:build mpi

package mpi

/*
#cgo pkg-config: ompi-c
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>

// add128 adds (lo, hi) pairs as 128-bit integers modulo 2^128.
static void dpfl_add128(void *in, void *inout, int *len, MPI_Datatype *dt) {
	const uint64_t *a = in;
	uint64_t *b = inout;
	for (int i = 0; i < *len; i++) {
		uint64_t lo = a[2*i] + b[2*i];
		b[2*i+1] += a[2*i+1] + (lo < a[2*i]);
		b[2*i] = lo;
	}
}

static MPI_Datatype dpfl_pair;
static MPI_Op dpfl_sum128;

static int dpfl_init(int *provided) {
	int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided);
	if (rc != MPI_SUCCESS) return rc;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if ((rc = MPI_Type_contiguous(2, MPI_UINT64_T, &dpfl_pair)) != MPI_SUCCESS) return rc;
	if ((rc = MPI_Type_commit(&dpfl_pair)) != MPI_SUCCESS) return rc;
	return MPI_Op_create(dpfl_add128, 1, &dpfl_sum128);
}

static int dpfl_rank(int *r) { return MPI_Comm_rank(MPI_COMM_WORLD, r); }
static int dpfl_size(int *s) { return MPI_Comm_size(MPI_COMM_WORLD, s); }
static int dpfl_allreduce128(uint64_t *buf, int pairs) {
	return MPI_Allreduce(MPI_IN_PLACE, buf, pairs, dpfl_pair, dpfl_sum128, MPI_COMM_WORLD);
}
static int dpfl_bcast(void *buf, int n) { return MPI_Bcast(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD); }
static int dpfl_barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }
static int dpfl_finalize(void) {
	MPI_Op_free(&dpfl_sum128);
	MPI_Type_free(&dpfl_pair);
	return MPI_Finalize();
}
static int dpfl_abort(int code) { return MPI_Abort(MPI_COMM_WORLD, code); }
static void dpfl_error_string(int code, char *s, int *n) { MPI_Error_string(code, s, n); }
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// World is MPI_COMM_WORLD. Its methods must be called by one goroutine at
// a time (MPI_THREAD_SERIALIZED).
type World struct {
	rank, size int
}

// chunk bounds the elements of one MPI call (its count is a C int).
const chunk = 1 << 26

func check(rc C.int, what string) error {
	if rc == C.MPI_SUCCESS {
		return nil
	}
	buf := make([]byte, C.MPI_MAX_ERROR_STRING)
	var n C.int
	C.dpfl_error_string(rc, (*C.char)(unsafe.Pointer(&buf[0])), &n)
	return fmt.Errorf("mpi: %s: %s", what, buf[:n])
}

// Init starts MPI (once per process) and returns the world communicator.
// The calling goroutine stays on its OS thread.
func Init() (*World, error) {
	runtime.LockOSThread()
	var provided C.int
	if err := check(C.dpfl_init(&provided), "init"); err != nil {
		return nil, err
	}
	if provided < C.MPI_THREAD_SERIALIZED {
		C.dpfl_finalize()
		return nil, errors.New("mpi: the MPI library does not support calls from several threads one at a time (MPI_THREAD_SERIALIZED)")
	}
	var r, s C.int
	if err := check(C.dpfl_rank(&r), "rank"); err != nil {
		return nil, err
	}
	if err := check(C.dpfl_size(&s), "size"); err != nil {
		return nil, err
	}
	return &World{rank: int(r), size: int(s)}, nil
}

// Rank returns this process's rank.
func (w *World) Rank() int { return w.rank }

// Size returns the number of ranks.
func (w *World) Size() int { return w.size }

// SumWords replaces buf on every rank by the ranks' element-wise sum of
// 128-bit (lo, hi) pairs (an allreduce with a commutative 128-bit add).
func (w *World) SumWords(buf []uint64) error {
	if len(buf)%2 != 0 {
		return fmt.Errorf("mpi: %d words are not (lo, hi) pairs", len(buf))
	}
	for lo := 0; lo < len(buf); lo += 2 * chunk {
		part := buf[lo:min(lo+2*chunk, len(buf))]
		if len(part) == 0 {
			break
		}
		rc := C.dpfl_allreduce128((*C.uint64_t)(unsafe.Pointer(&part[0])), C.int(len(part)/2))
		if err := check(rc, "allreduce"); err != nil {
			return err
		}
	}
	return nil
}

// Broadcast replaces buf on every rank by rank 0's.
func (w *World) Broadcast(buf []byte) error {
	for lo := 0; lo < len(buf); lo += chunk {
		part := buf[lo:min(lo+chunk, len(buf))]
		if err := check(C.dpfl_bcast(unsafe.Pointer(&part[0]), C.int(len(part))), "broadcast"); err != nil {
			return err
		}
	}
	return nil
}

// Barrier waits for every rank.
func (w *World) Barrier() error { return check(C.dpfl_barrier(), "barrier") }

// Finalize ends MPI (every rank, after its last collective).
func (w *World) Finalize() error { return check(C.dpfl_finalize(), "finalize") }

// Abort ends every rank of the job with the exit code.
func (w *World) Abort(code int) { C.dpfl_abort(C.int(code)) }

// End ends MPI on this rank: Finalize, or, with abort, Abort(code) (a rank
// that fails while the others may wait in a collective).
func (w *World) End(code int, abort bool) error {
	if abort {
		w.Abort(code)
	}
	return w.Finalize()
}
