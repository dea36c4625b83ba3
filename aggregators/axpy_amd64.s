//go:build !purego

#include "textflag.h"

// func axpy8AVX2(dst, a, x0, x1, x2, x3, x4, x5, x6, x7 []float64)
//
// dst[i] = ((dst[i] + a0·x0[i]) + a1·x1[i]) + … + a7·x7[i] for i < len(dst)
// rounded down to a multiple of 16, four lanes at a time: each product and
// each sum is rounded separately (VMULPD, then VADDPD; no fused
// multiply-add), in the order of the scalar loop, so every coordinate is
// bit-identical to axpy8Go. Four independent accumulators per iteration hide
// the latency of the add chain.
TEXT ·axpy8AVX2(SB), NOSPLIT, $0-240
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), R11
	ANDQ $-16, R11
	MOVQ a_base+24(FP), R12
	VBROADCASTSD 0(R12), Y0
	VBROADCASTSD 8(R12), Y1
	VBROADCASTSD 16(R12), Y2
	VBROADCASTSD 24(R12), Y3
	VBROADCASTSD 32(R12), Y4
	VBROADCASTSD 40(R12), Y5
	VBROADCASTSD 48(R12), Y6
	VBROADCASTSD 56(R12), Y7
	MOVQ x0_base+48(FP), AX
	MOVQ x1_base+72(FP), BX
	MOVQ x2_base+96(FP), CX
	MOVQ x3_base+120(FP), DX
	MOVQ x4_base+144(FP), SI
	MOVQ x5_base+168(FP), R8
	MOVQ x6_base+192(FP), R9
	MOVQ x7_base+216(FP), R10
	XORQ R12, R12
	CMPQ R11, $0
	JE   done

loop:
	VMOVUPD 0(DI)(R12*8), Y8
	VMOVUPD 32(DI)(R12*8), Y9
	VMOVUPD 64(DI)(R12*8), Y10
	VMOVUPD 96(DI)(R12*8), Y11

#define TERM(R, A) \
	VMULPD 0(R)(R12*8), A, Y12 \
	VMULPD 32(R)(R12*8), A, Y13 \
	VMULPD 64(R)(R12*8), A, Y14 \
	VMULPD 96(R)(R12*8), A, Y15 \
	VADDPD Y12, Y8, Y8 \
	VADDPD Y13, Y9, Y9 \
	VADDPD Y14, Y10, Y10 \
	VADDPD Y15, Y11, Y11

	TERM(AX, Y0)
	TERM(BX, Y1)
	TERM(CX, Y2)
	TERM(DX, Y3)
	TERM(SI, Y4)
	TERM(R8, Y5)
	TERM(R9, Y6)
	TERM(R10, Y7)

	VMOVUPD Y8, 0(DI)(R12*8)
	VMOVUPD Y9, 32(DI)(R12*8)
	VMOVUPD Y10, 64(DI)(R12*8)
	VMOVUPD Y11, 96(DI)(R12*8)
	ADDQ $16, R12
	CMPQ R12, R11
	JLT  loop

done:
	VZEROUPPER
	RET
