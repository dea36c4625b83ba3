//go:build !purego

#include "textflag.h"

// func dot4AVX2(c, x0, x1, x2, x3 []float64) (s0, s1, s2, s3 float64)
//
// s_q = Σ_i c[i]·x_q[i] over i < len(c), each summed exactly as gonum's
// DotUnitary (internal/asm/f64/dot_amd64.s) sums it: lane l of the
// accumulator takes the products i ≡ l (mod 4) of the full blocks of four,
// the 0–3 leftover products go into lane 0 one by one, and the result is
// (l1 + l3) + (l0 + l2). Four independent accumulators (one per vector) keep
// the adds busy where one dot product waits on its own chain.
TEXT ·dot4AVX2(SB), NOSPLIT, $0-152
	MOVQ c_base+0(FP), SI
	MOVQ c_len+8(FP), CX
	MOVQ x0_base+24(FP), R8
	MOVQ x1_base+48(FP), R9
	MOVQ x2_base+72(FP), R10
	MOVQ x3_base+96(FP), R11
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	MOVQ CX, DX
	ANDQ $-4, DX
	XORQ AX, AX
	CMPQ DX, $0
	JE   tail

loop:
	VMOVUPD (SI)(AX*8), Y4
	VMULPD  (R8)(AX*8), Y4, Y5
	VMULPD  (R9)(AX*8), Y4, Y6
	VMULPD  (R10)(AX*8), Y4, Y7
	VMULPD  (R11)(AX*8), Y4, Y12
	VADDPD  Y5, Y0, Y0
	VADDPD  Y6, Y1, Y1
	VADDPD  Y7, Y2, Y2
	VADDPD  Y12, Y3, Y3
	ADDQ    $4, AX
	CMPQ    AX, DX
	JLT     loop

tail:
	// Lanes 2 and 3 aside; VEX scalar ops below clear the upper halves.
	VEXTRACTF128 $1, Y0, X8
	VEXTRACTF128 $1, Y1, X9
	VEXTRACTF128 $1, Y2, X10
	VEXTRACTF128 $1, Y3, X11
	CMPQ AX, CX
	JGE  end

tailloop:
	VMOVSD (SI)(AX*8), X4
	VMULSD (R8)(AX*8), X4, X5
	VADDSD X5, X0, X0
	VMULSD (R9)(AX*8), X4, X6
	VADDSD X6, X1, X1
	VMULSD (R10)(AX*8), X4, X7
	VADDSD X7, X2, X2
	VMULSD (R11)(AX*8), X4, X12
	VADDSD X12, X3, X3
	INCQ   AX
	CMPQ   AX, CX
	JLT    tailloop

end:
	// [l0+l2, l1+l3], then (l1+l3) + (l0+l2).
	VADDPD    X8, X0, X0
	VUNPCKHPD X0, X0, X4
	VADDSD    X0, X4, X4
	VMOVSD    X4, s0+120(FP)
	VADDPD    X9, X1, X1
	VUNPCKHPD X1, X1, X5
	VADDSD    X1, X5, X5
	VMOVSD    X5, s1+128(FP)
	VADDPD    X10, X2, X2
	VUNPCKHPD X2, X2, X6
	VADDSD    X2, X6, X6
	VMOVSD    X6, s2+136(FP)
	VADDPD    X11, X3, X3
	VUNPCKHPD X3, X3, X7
	VADDSD    X3, X7, X7
	VMOVSD    X7, s3+144(FP)
	VZEROUPPER
	RET

// func axpy4AVX2(dst, a, x0, x1, x2, x3 []float64)
//
// dst[i] = (((dst[i] + a0·x0[i]) + a1·x1[i]) + a2·x2[i]) + a3·x3[i] for
// i < len(dst) &^ 15: each product and sum rounded separately (VMULPD,
// VADDPD), the order of four gonum Daxpy calls (AxpyUnitary: y + α·x).
TEXT ·axpy4AVX2(SB), NOSPLIT, $0-144
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), R11
	ANDQ $-16, R11
	MOVQ a_base+24(FP), R12
	VBROADCASTSD 0(R12), Y0
	VBROADCASTSD 8(R12), Y1
	VBROADCASTSD 16(R12), Y2
	VBROADCASTSD 24(R12), Y3
	MOVQ x0_base+48(FP), AX
	MOVQ x1_base+72(FP), BX
	MOVQ x2_base+96(FP), CX
	MOVQ x3_base+120(FP), DX
	XORQ R12, R12
	CMPQ R11, $0
	JE   done4

loop4:
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

	VMOVUPD Y8, 0(DI)(R12*8)
	VMOVUPD Y9, 32(DI)(R12*8)
	VMOVUPD Y10, 64(DI)(R12*8)
	VMOVUPD Y11, 96(DI)(R12*8)
	ADDQ $16, R12
	CMPQ R12, R11
	JLT  loop4

done4:
	VZEROUPPER
	RET

// The selected-inversion kernels (selFwdGo, selRevGo). One step of four
// lanes at byte offset off, its dot product into accumulator acc (a Y
// register), with the rows' other outputs; each product and sum rounded
// separately, in the Go forms' order. The tails do one element into lane 0
// of X0.
#define FWD_STEP(off, acc) \
	VMOVUPD off(SI)(AX*8), Y4; \
	VMULPD  off(R8)(AX*8), Y4, Y5; \
	VADDPD  Y5, acc, acc; \
	VMULPD  Y15, Y4, Y6; \
	VADDPD  off(R9)(AX*8), Y6, Y6; \
	VMOVUPD Y6, off(R9)(AX*8)

#define FWD_TAIL \
	VMOVSD (SI)(AX*8), X4; \
	VMULSD (R8)(AX*8), X4, X5; \
	VADDSD X5, X0, X0; \
	VMULSD X15, X4, X6; \
	VADDSD (R9)(AX*8), X6, X6; \
	VMOVSD X6, (R9)(AX*8)

#define REV_STEP(off, acc) \
	VMOVUPD off(SI)(AX*8), Y4; \
	VMOVUPD off(R9)(AX*8), Y5; \
	VMULPD  Y5, Y4, Y6; \
	VADDPD  Y6, acc, acc; \
	VMULPD  Y15, Y4, Y7; \
	VADDPD  off(R10)(AX*8), Y7, Y7; \
	VMOVUPD Y7, off(R10)(AX*8); \
	VMULPD  off(R8)(AX*8), Y15, Y9; \
	VMULPD  Y14, Y5, Y10; \
	VADDPD  Y10, Y9, Y9; \
	VADDPD  off(DI)(AX*8), Y9, Y9; \
	VMOVUPD Y9, off(DI)(AX*8)

#define REV_TAIL \
	VMOVSD (SI)(AX*8), X4; \
	VMOVSD (R9)(AX*8), X5; \
	VMULSD X5, X4, X6; \
	VADDSD X6, X0, X0; \
	VMULSD X15, X4, X7; \
	VADDSD (R10)(AX*8), X7, X7; \
	VMOVSD X7, (R10)(AX*8); \
	VMULSD (R8)(AX*8), X15, X9; \
	VMULSD X14, X5, X10; \
	VADDSD X10, X9, X9; \
	VADDSD (DI)(AX*8), X9, X9; \
	VMOVSD X9, (DI)(AX*8)

// FOURS(step, l4, done) runs step from element AX over the full blocks of
// four below CX into Y0; ONES(tail, l1, done) runs tail from AX to CX.
#define FOURS(step, l4, done) \
l4: \
	MOVQ   CX, DX; \
	ANDQ   $-4, DX; \
	CMPQ   AX, DX; \
	JGE    done; \
	step(0, Y0); \
	ADDQ   $4, AX; \
	JMP    l4

#define ONES(tail, l1, done) \
l1: \
	CMPQ   AX, CX; \
	JGE    done; \
	tail; \
	INCQ   AX; \
	JMP    l1

// LANES4(step, tail, l4, lt, ltail, red) runs a four-lane kernel over CX
// elements: step over the full blocks of four into Y0, then tail over the
// last 0–3 into lane 0 of X0 (lanes 2 and 3 set aside first: VEX scalar
// ops clear them), and leaves (l1 + l3) + (l0 + l2) in X4.
#define LANES4(step, tail, l4, lt, ltail, red) \
	VXORPD Y0, Y0, Y0; \
	XORQ   AX, AX; \
	FOURS(step, l4, lt); \
lt: \
	VEXTRACTF128 $1, Y0, X8; \
	ONES(tail, ltail, red); \
red: \
	VADDPD    X8, X0, X0; \
	VUNPCKHPD X0, X0, X4; \
	VADDSD    X0, X4, X4

// LANES16(step, tail, l16, l4, lt, ltail, red) runs a 16-lane kernel over
// CX elements: step over the full blocks of 16 into Y0–Y3, then over the
// remaining full blocks of four into Y0, then tail over the last 0–3 into
// lane 0 of X0 (the upper lanes set aside first: VEX scalar ops clear
// them), and leaves the reduced sum in X4:
// v_l = (a_l + a_(4+l)) + (a_(8+l) + a_(12+l)), then (v1+v3) + (v0+v2).
#define LANES16(step, tail, l16, l4, lt, ltail, red) \
	VXORPD Y0, Y0, Y0; \
	VXORPD Y1, Y1, Y1; \
	VXORPD Y2, Y2, Y2; \
	VXORPD Y3, Y3, Y3; \
	MOVQ   CX, DX; \
	ANDQ   $-16, DX; \
	XORQ   AX, AX; \
	CMPQ   DX, $0; \
	JE     l4; \
l16: \
	step(0, Y0); \
	step(32, Y1); \
	step(64, Y2); \
	step(96, Y3); \
	ADDQ   $16, AX; \
	CMPQ   AX, DX; \
	JLT    l16; \
	FOURS(step, l4, lt); \
lt: \
	VEXTRACTF128 $1, Y0, X8; \
	VEXTRACTF128 $1, Y1, X11; \
	VEXTRACTF128 $1, Y2, X12; \
	VEXTRACTF128 $1, Y3, X13; \
	ONES(tail, ltail, red); \
red: \
	VADDPD    X1, X0, X0; \
	VADDPD    X3, X2, X2; \
	VADDPD    X2, X0, X0; \
	VADDPD    X11, X8, X8; \
	VADDPD    X13, X12, X12; \
	VADDPD    X12, X8, X8; \
	VADDPD    X8, X0, X0; \
	VUNPCKHPD X0, X0, X4; \
	VADDSD    X0, X4, X4

// func selFwdAVX2(row, w, y []float64, wa float64, wide bool) float64
//
// Returns Σ_b row[b]·w[b] and sets y[b] += wa·row[b] for b < len(row)
// (w and y at least as long), bit for bit as selFwdGo: the sum in four
// lanes (LANES4), or in 16 if wide (LANES16); every product and sum is
// rounded separately.
TEXT ·selFwdAVX2(SB), NOSPLIT, $0-96
	MOVQ row_base+0(FP), SI
	MOVQ row_len+8(FP), CX
	MOVQ w_base+24(FP), R8
	MOVQ y_base+48(FP), R9
	VBROADCASTSD wa+72(FP), Y15
	MOVBQZX wide+80(FP), BX
	TESTQ BX, BX
	JNE  fwide
	LANES4(FWD_STEP, FWD_TAIL, f4, ft, ftail, fred)
	JMP  fout

fwide:
	LANES16(FWD_STEP, FWD_TAIL, g16, g4, gt, gtail, gred)

fout:
	VMOVSD X4, ret+88(FP)
	VZEROUPPER
	RET

// func selRevAVX2(row, srow, w, yb, wb []float64, wa, yba float64, wide bool) float64
//
// The adjoint of selFwdAVX2's row: returns Σ_b row[b]·yb[b] (summed as
// selFwdAVX2 sums), sets wb[b] += yba·row[b] and
// srow[b] += yba·w[b] + wa·yb[b] for b < len(row); every product and sum
// rounded separately, in that order (selRevGo's bits).
TEXT ·selRevAVX2(SB), NOSPLIT, $0-152
	MOVQ row_base+0(FP), SI
	MOVQ row_len+8(FP), CX
	MOVQ srow_base+24(FP), DI
	MOVQ w_base+48(FP), R8
	MOVQ yb_base+72(FP), R9
	MOVQ wb_base+96(FP), R10
	VBROADCASTSD wa+120(FP), Y14
	VBROADCASTSD yba+128(FP), Y15
	MOVBQZX wide+136(FP), BX
	TESTQ BX, BX
	JNE  rwide
	LANES4(REV_STEP, REV_TAIL, r4, rt, rtail, rred)
	JMP  rout

rwide:
	LANES16(REV_STEP, REV_TAIL, h16, h4, ht, htail, hred)

rout:
	VMOVSD X4, ret+144(FP)
	VZEROUPPER
	RET

// func selAxpyAVX2(a float64, x, y []float64)
//
// y[b] += a·x[b] for b < len(x), each product and sum rounded separately
// (selAxpyGo's bits).
TEXT ·selAxpyAVX2(SB), NOSPLIT, $0-56
	VBROADCASTSD a+0(FP), Y15
	MOVQ x_base+8(FP), SI
	MOVQ x_len+16(FP), CX
	MOVQ y_base+32(FP), R9
	MOVQ CX, DX
	ANDQ $-8, DX
	XORQ AX, AX
	CMPQ DX, $0
	JE   xtail

xloop:
	VMULPD  (SI)(AX*8), Y15, Y4
	VMULPD  32(SI)(AX*8), Y15, Y5
	VADDPD  (R9)(AX*8), Y4, Y4
	VADDPD  32(R9)(AX*8), Y5, Y5
	VMOVUPD Y4, (R9)(AX*8)
	VMOVUPD Y5, 32(R9)(AX*8)
	ADDQ    $8, AX
	CMPQ    AX, DX
	JLT     xloop

xtail:
	CMPQ AX, CX
	JGE  xend

xtailloop:
	VMULSD (SI)(AX*8), X15, X4
	VADDSD (R9)(AX*8), X4, X4
	VMOVSD X4, (R9)(AX*8)
	INCQ   AX
	CMPQ   AX, CX
	JLT    xtailloop

xend:
	VZEROUPPER
	RET
