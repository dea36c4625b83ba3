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

// func selFwdAVX2(row, w, y []float64, wa float64) float64
//
// Returns Σ_b row[b]·w[b] and sets y[b] += wa·row[b] for b < len(row)
// (w and y at least as long). The sum is taken as selFwdGo takes it: lane l
// of the accumulator sums the products b ≡ l (mod 4) of the full blocks of
// four, the leftover products go into lane 0 one by one, and the result is
// (l1 + l3) + (l0 + l2); every product and sum is rounded separately.
TEXT ·selFwdAVX2(SB), NOSPLIT, $0-88
	MOVQ row_base+0(FP), SI
	MOVQ row_len+8(FP), CX
	MOVQ w_base+24(FP), R8
	MOVQ y_base+48(FP), R9
	VBROADCASTSD wa+72(FP), Y15
	VXORPD Y0, Y0, Y0
	MOVQ CX, DX
	ANDQ $-4, DX
	XORQ AX, AX
	CMPQ DX, $0
	JE   ftail

floop:
	VMOVUPD (SI)(AX*8), Y4
	VMULPD  (R8)(AX*8), Y4, Y5
	VADDPD  Y5, Y0, Y0
	VMULPD  Y15, Y4, Y6
	VADDPD  (R9)(AX*8), Y6, Y6
	VMOVUPD Y6, (R9)(AX*8)
	ADDQ    $4, AX
	CMPQ    AX, DX
	JLT     floop

ftail:
	VEXTRACTF128 $1, Y0, X8
	CMPQ AX, CX
	JGE  fend

ftailloop:
	VMOVSD (SI)(AX*8), X4
	VMULSD (R8)(AX*8), X4, X5
	VADDSD X5, X0, X0
	VMULSD X15, X4, X6
	VADDSD (R9)(AX*8), X6, X6
	VMOVSD X6, (R9)(AX*8)
	INCQ   AX
	CMPQ   AX, CX
	JLT    ftailloop

fend:
	VADDPD    X8, X0, X0
	VUNPCKHPD X0, X0, X4
	VADDSD    X0, X4, X4
	VMOVSD    X4, ret+80(FP)
	VZEROUPPER
	RET

// func selRevAVX2(row, srow, w, yb, wb []float64, wa, yba float64) float64
//
// The adjoint of selFwdAVX2's row: returns Σ_b row[b]·yb[b] (summed as
// selFwdAVX2 sums), sets wb[b] += yba·row[b] and
// srow[b] += yba·w[b] + wa·yb[b] for b < len(row); every product and sum
// rounded separately, in that order.
TEXT ·selRevAVX2(SB), NOSPLIT, $0-144
	MOVQ row_base+0(FP), SI
	MOVQ row_len+8(FP), CX
	MOVQ srow_base+24(FP), DI
	MOVQ w_base+48(FP), R8
	MOVQ yb_base+72(FP), R9
	MOVQ wb_base+96(FP), R10
	VBROADCASTSD wa+120(FP), Y14
	VBROADCASTSD yba+128(FP), Y15
	VXORPD Y0, Y0, Y0
	MOVQ CX, DX
	ANDQ $-4, DX
	XORQ AX, AX
	CMPQ DX, $0
	JE   rtail

rloop:
	VMOVUPD (SI)(AX*8), Y4
	VMOVUPD (R9)(AX*8), Y5
	VMULPD  Y5, Y4, Y6
	VADDPD  Y6, Y0, Y0
	VMULPD  Y15, Y4, Y7
	VADDPD  (R10)(AX*8), Y7, Y7
	VMOVUPD Y7, (R10)(AX*8)
	VMULPD  (R8)(AX*8), Y15, Y9
	VMULPD  Y14, Y5, Y10
	VADDPD  Y10, Y9, Y9
	VADDPD  (DI)(AX*8), Y9, Y9
	VMOVUPD Y9, (DI)(AX*8)
	ADDQ    $4, AX
	CMPQ    AX, DX
	JLT     rloop

rtail:
	VEXTRACTF128 $1, Y0, X8
	CMPQ AX, CX
	JGE  rend

rtailloop:
	VMOVSD (SI)(AX*8), X4
	VMOVSD (R9)(AX*8), X5
	VMULSD X5, X4, X6
	VADDSD X6, X0, X0
	VMULSD X15, X4, X7
	VADDSD (R10)(AX*8), X7, X7
	VMOVSD X7, (R10)(AX*8)
	VMULSD (R8)(AX*8), X15, X9
	VMULSD X14, X5, X10
	VADDSD X10, X9, X9
	VADDSD (DI)(AX*8), X9, X9
	VMOVSD X9, (DI)(AX*8)
	INCQ   AX
	CMPQ   AX, CX
	JLT    rtailloop

rend:
	VADDPD    X8, X0, X0
	VUNPCKHPD X0, X0, X4
	VADDSD    X0, X4, X4
	VMOVSD    X4, ret+136(FP)
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

// func selFwd16AVX2(row, w, y []float64, wa float64) float64
//
// selFwd16Go in AVX2, bit for bit: selFwdAVX2 with the dot product summed
// in 16 lanes (four accumulators) as dot16Go sums, so that the adds do not
// wait on one accumulator's chain.
TEXT ·selFwd16AVX2(SB), NOSPLIT, $0-88
	MOVQ row_base+0(FP), SI
	MOVQ row_len+8(FP), CX
	MOVQ w_base+24(FP), R8
	MOVQ y_base+48(FP), R9
	VBROADCASTSD wa+72(FP), Y15
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	MOVQ CX, DX
	ANDQ $-16, DX
	XORQ AX, AX
	CMPQ DX, $0
	JE   gfour

gloop16:
	VMOVUPD (SI)(AX*8), Y4
	VMULPD  (R8)(AX*8), Y4, Y5
	VADDPD  Y5, Y0, Y0
	VMULPD  Y15, Y4, Y6
	VADDPD  (R9)(AX*8), Y6, Y6
	VMOVUPD Y6, (R9)(AX*8)
	VMOVUPD 32(SI)(AX*8), Y4
	VMULPD  32(R8)(AX*8), Y4, Y5
	VADDPD  Y5, Y1, Y1
	VMULPD  Y15, Y4, Y6
	VADDPD  32(R9)(AX*8), Y6, Y6
	VMOVUPD Y6, 32(R9)(AX*8)
	VMOVUPD 64(SI)(AX*8), Y4
	VMULPD  64(R8)(AX*8), Y4, Y5
	VADDPD  Y5, Y2, Y2
	VMULPD  Y15, Y4, Y6
	VADDPD  64(R9)(AX*8), Y6, Y6
	VMOVUPD Y6, 64(R9)(AX*8)
	VMOVUPD 96(SI)(AX*8), Y4
	VMULPD  96(R8)(AX*8), Y4, Y5
	VADDPD  Y5, Y3, Y3
	VMULPD  Y15, Y4, Y6
	VADDPD  96(R9)(AX*8), Y6, Y6
	VMOVUPD Y6, 96(R9)(AX*8)
	ADDQ    $16, AX
	CMPQ    AX, DX
	JLT     gloop16

gfour:
	MOVQ CX, DX
	ANDQ $-4, DX
	CMPQ AX, DX
	JGE  gtail

gloop4:
	VMOVUPD (SI)(AX*8), Y4
	VMULPD  (R8)(AX*8), Y4, Y5
	VADDPD  Y5, Y0, Y0
	VMULPD  Y15, Y4, Y6
	VADDPD  (R9)(AX*8), Y6, Y6
	VMOVUPD Y6, (R9)(AX*8)
	ADDQ    $4, AX
	CMPQ    AX, DX
	JLT     gloop4

gtail:
	// Lanes 2 and 3 aside; VEX scalar ops below clear the upper halves.
	VEXTRACTF128 $1, Y0, X8
	VEXTRACTF128 $1, Y1, X11
	VEXTRACTF128 $1, Y2, X12
	VEXTRACTF128 $1, Y3, X13
	CMPQ AX, CX
	JGE  gred

gtailloop:
	VMOVSD (SI)(AX*8), X4
	VMULSD (R8)(AX*8), X4, X5
	VADDSD X5, X0, X0
	VMULSD X15, X4, X6
	VADDSD (R9)(AX*8), X6, X6
	VMOVSD X6, (R9)(AX*8)
	INCQ   AX
	CMPQ   AX, CX
	JLT    gtailloop

gred:
	// v_l = (a_l + a_(4+l)) + (a_(8+l) + a_(12+l)), then (v1+v3) + (v0+v2).
	VADDPD    X1, X0, X0
	VADDPD    X3, X2, X2
	VADDPD    X2, X0, X0
	VADDPD    X11, X8, X8
	VADDPD    X13, X12, X12
	VADDPD    X12, X8, X8
	VADDPD    X8, X0, X0
	VUNPCKHPD X0, X0, X4
	VADDSD    X0, X4, X4
	VMOVSD    X4, ret+80(FP)
	VZEROUPPER
	RET

// func selRev16AVX2(row, srow, w, yb, wb []float64, wa, yba float64) float64
//
// selRev16Go in AVX2, bit for bit: selRevAVX2 with the dot product summed
// in 16 lanes as dot16Go sums.
TEXT ·selRev16AVX2(SB), NOSPLIT, $0-144
	MOVQ row_base+0(FP), SI
	MOVQ row_len+8(FP), CX
	MOVQ srow_base+24(FP), DI
	MOVQ w_base+48(FP), R8
	MOVQ yb_base+72(FP), R9
	MOVQ wb_base+96(FP), R10
	VBROADCASTSD wa+120(FP), Y14
	VBROADCASTSD yba+128(FP), Y15
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	MOVQ CX, DX
	ANDQ $-16, DX
	XORQ AX, AX
	CMPQ DX, $0
	JE   hfour

hloop16:
	VMOVUPD (SI)(AX*8), Y4
	VMOVUPD (R9)(AX*8), Y5
	VMULPD  Y5, Y4, Y6
	VADDPD  Y6, Y0, Y0
	VMULPD  Y15, Y4, Y7
	VADDPD  (R10)(AX*8), Y7, Y7
	VMOVUPD Y7, (R10)(AX*8)
	VMULPD  (R8)(AX*8), Y15, Y9
	VMULPD  Y14, Y5, Y10
	VADDPD  Y10, Y9, Y9
	VADDPD  (DI)(AX*8), Y9, Y9
	VMOVUPD Y9, (DI)(AX*8)
	VMOVUPD 32(SI)(AX*8), Y4
	VMOVUPD 32(R9)(AX*8), Y5
	VMULPD  Y5, Y4, Y6
	VADDPD  Y6, Y1, Y1
	VMULPD  Y15, Y4, Y7
	VADDPD  32(R10)(AX*8), Y7, Y7
	VMOVUPD Y7, 32(R10)(AX*8)
	VMULPD  32(R8)(AX*8), Y15, Y9
	VMULPD  Y14, Y5, Y10
	VADDPD  Y10, Y9, Y9
	VADDPD  32(DI)(AX*8), Y9, Y9
	VMOVUPD Y9, 32(DI)(AX*8)
	VMOVUPD 64(SI)(AX*8), Y4
	VMOVUPD 64(R9)(AX*8), Y5
	VMULPD  Y5, Y4, Y6
	VADDPD  Y6, Y2, Y2
	VMULPD  Y15, Y4, Y7
	VADDPD  64(R10)(AX*8), Y7, Y7
	VMOVUPD Y7, 64(R10)(AX*8)
	VMULPD  64(R8)(AX*8), Y15, Y9
	VMULPD  Y14, Y5, Y10
	VADDPD  Y10, Y9, Y9
	VADDPD  64(DI)(AX*8), Y9, Y9
	VMOVUPD Y9, 64(DI)(AX*8)
	VMOVUPD 96(SI)(AX*8), Y4
	VMOVUPD 96(R9)(AX*8), Y5
	VMULPD  Y5, Y4, Y6
	VADDPD  Y6, Y3, Y3
	VMULPD  Y15, Y4, Y7
	VADDPD  96(R10)(AX*8), Y7, Y7
	VMOVUPD Y7, 96(R10)(AX*8)
	VMULPD  96(R8)(AX*8), Y15, Y9
	VMULPD  Y14, Y5, Y10
	VADDPD  Y10, Y9, Y9
	VADDPD  96(DI)(AX*8), Y9, Y9
	VMOVUPD Y9, 96(DI)(AX*8)
	ADDQ    $16, AX
	CMPQ    AX, DX
	JLT     hloop16

hfour:
	MOVQ CX, DX
	ANDQ $-4, DX
	CMPQ AX, DX
	JGE  htail

hloop4:
	VMOVUPD (SI)(AX*8), Y4
	VMOVUPD (R9)(AX*8), Y5
	VMULPD  Y5, Y4, Y6
	VADDPD  Y6, Y0, Y0
	VMULPD  Y15, Y4, Y7
	VADDPD  (R10)(AX*8), Y7, Y7
	VMOVUPD Y7, (R10)(AX*8)
	VMULPD  (R8)(AX*8), Y15, Y9
	VMULPD  Y14, Y5, Y10
	VADDPD  Y10, Y9, Y9
	VADDPD  (DI)(AX*8), Y9, Y9
	VMOVUPD Y9, (DI)(AX*8)
	ADDQ    $4, AX
	CMPQ    AX, DX
	JLT     hloop4

htail:
	// Lanes 2 and 3 aside; VEX scalar ops below clear the upper halves.
	VEXTRACTF128 $1, Y0, X8
	VEXTRACTF128 $1, Y1, X11
	VEXTRACTF128 $1, Y2, X12
	VEXTRACTF128 $1, Y3, X13
	CMPQ AX, CX
	JGE  hred

htailloop:
	VMOVSD (SI)(AX*8), X4
	VMOVSD (R9)(AX*8), X5
	VMULSD X5, X4, X6
	VADDSD X6, X0, X0
	VMULSD X15, X4, X7
	VADDSD (R10)(AX*8), X7, X7
	VMOVSD X7, (R10)(AX*8)
	VMULSD (R8)(AX*8), X15, X9
	VMULSD X14, X5, X10
	VADDSD X10, X9, X9
	VADDSD (DI)(AX*8), X9, X9
	VMOVSD X9, (DI)(AX*8)
	INCQ   AX
	CMPQ   AX, CX
	JLT    htailloop

hred:
	// v_l = (a_l + a_(4+l)) + (a_(8+l) + a_(12+l)), then (v1+v3) + (v0+v2).
	VADDPD    X1, X0, X0
	VADDPD    X3, X2, X2
	VADDPD    X2, X0, X0
	VADDPD    X11, X8, X8
	VADDPD    X13, X12, X12
	VADDPD    X12, X8, X8
	VADDPD    X8, X0, X0
	VUNPCKHPD X0, X0, X4
	VADDSD    X0, X4, X4
	VMOVSD    X4, ret+136(FP)
	VZEROUPPER
	RET
