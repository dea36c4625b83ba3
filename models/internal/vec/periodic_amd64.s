#include "textflag.h"

// AVX2 loops of the periodic kernels (see periodic.go): the Go code's
// float64 operations, 4 lanes at a time (8 values a step: two halves), in
// the same order per slot and without fused multiply-adds. AX indexes the
// values, DX the slots of period t (or ts), R12 those of period tc; a slot
// index returns to 0 when it reaches its period (a multiple of 8).

// func sumPAVX2(acc *float64, t int, x *float32, n int)
TEXT ·sumPAVX2(SB), NOSPLIT, $0-32
	MOVQ acc+0(FP), DI
	MOVQ t+8(FP), R8
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	XORQ AX, AX
	XORQ DX, DX
	XORQ R12, R12
sumPAVX2_loop:
	VCVTPS2PD (SI)(AX*4), Y0
	VCVTPS2PD 16(SI)(AX*4), Y1
	VADDPD (DI)(DX*8), Y0, Y0
	VADDPD 32(DI)(DX*8), Y1, Y1
	VMOVUPD Y0, (DI)(DX*8)
	VMOVUPD Y1, 32(DI)(DX*8)
	ADDQ $8, AX
	ADDQ $8, DX
	CMPQ DX, R8
	JNE sumPAVX2_w0
	XORQ DX, DX
sumPAVX2_w0:
	CMPQ AX, CX
	JLT sumPAVX2_loop
	VZEROUPPER
	RET

// func sumSqDevPAVX2(acc, mean *float64, t int, x *float32, n int)
TEXT ·sumSqDevPAVX2(SB), NOSPLIT, $0-40
	MOVQ acc+0(FP), DI
	MOVQ mean+8(FP), BX
	MOVQ t+16(FP), R8
	MOVQ x+24(FP), SI
	MOVQ n+32(FP), CX
	XORQ AX, AX
	XORQ DX, DX
	XORQ R12, R12
sumSqDevPAVX2_loop:
	VCVTPS2PD (SI)(AX*4), Y0
	VCVTPS2PD 16(SI)(AX*4), Y1
	VSUBPD (BX)(DX*8), Y0, Y0
	VSUBPD 32(BX)(DX*8), Y1, Y1
	VMULPD Y0, Y0, Y0
	VMULPD Y1, Y1, Y1
	VADDPD (DI)(DX*8), Y0, Y0
	VADDPD 32(DI)(DX*8), Y1, Y1
	VMOVUPD Y0, (DI)(DX*8)
	VMOVUPD Y1, 32(DI)(DX*8)
	ADDQ $8, AX
	ADDQ $8, DX
	CMPQ DX, R8
	JNE sumSqDevPAVX2_w0
	XORQ DX, DX
sumSqDevPAVX2_w0:
	CMPQ AX, CX
	JLT sumSqDevPAVX2_loop
	VZEROUPPER
	RET

// func normPAVX2(dst, x *float32, mean, scale *float64, t, n int)
TEXT ·normPAVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ mean+16(FP), BX
	MOVQ scale+24(FP), R9
	MOVQ t+32(FP), R8
	MOVQ n+40(FP), CX
	XORQ AX, AX
	XORQ DX, DX
	XORQ R12, R12
normPAVX2_loop:
	VCVTPS2PD (SI)(AX*4), Y0
	VCVTPS2PD 16(SI)(AX*4), Y1
	VSUBPD (BX)(DX*8), Y0, Y0
	VSUBPD 32(BX)(DX*8), Y1, Y1
	VMULPD (R9)(DX*8), Y0, Y0
	VMULPD 32(R9)(DX*8), Y1, Y1
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y1, X1
	VMOVUPS X0, (DI)(AX*4)
	VMOVUPS X1, 16(DI)(AX*4)
	ADDQ $8, AX
	ADDQ $8, DX
	CMPQ DX, R8
	JNE normPAVX2_w0
	XORQ DX, DX
normPAVX2_w0:
	CMPQ AX, CX
	JLT normPAVX2_loop
	VZEROUPPER
	RET

// func affinePAVX2(dst, x, gain, bias *float32, t, n int)
TEXT ·affinePAVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ gain+16(FP), BX
	MOVQ bias+24(FP), R9
	MOVQ t+32(FP), R8
	MOVQ n+40(FP), CX
	XORQ AX, AX
	XORQ DX, DX
	XORQ R12, R12
affinePAVX2_loop:
	VMOVUPS (BX)(DX*4), Y0
	VMULPS (SI)(AX*4), Y0, Y0
	VADDPS (R9)(DX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ $8, AX
	ADDQ $8, DX
	CMPQ DX, R8
	JNE affinePAVX2_w0
	XORQ DX, DX
affinePAVX2_w0:
	CMPQ AX, CX
	JLT affinePAVX2_loop
	VZEROUPPER
	RET

// func sumProdPAVX2(su, suv *float64, t int, u, v *float32, n int)
TEXT ·sumProdPAVX2(SB), NOSPLIT, $0-48
	MOVQ su+0(FP), DI
	MOVQ suv+8(FP), R9
	MOVQ t+16(FP), R8
	MOVQ u+24(FP), SI
	MOVQ v+32(FP), BX
	MOVQ n+40(FP), CX
	XORQ AX, AX
	XORQ DX, DX
	XORQ R12, R12
sumProdPAVX2_loop:
	VCVTPS2PD (SI)(AX*4), Y0
	VCVTPS2PD 16(SI)(AX*4), Y1
	VCVTPS2PD (BX)(AX*4), Y2
	VCVTPS2PD 16(BX)(AX*4), Y3
	VMULPD Y0, Y2, Y2
	VMULPD Y1, Y3, Y3
	VADDPD (DI)(DX*8), Y0, Y0
	VADDPD 32(DI)(DX*8), Y1, Y1
	VMOVUPD Y0, (DI)(DX*8)
	VMOVUPD Y1, 32(DI)(DX*8)
	VADDPD (R9)(DX*8), Y2, Y2
	VADDPD 32(R9)(DX*8), Y3, Y3
	VMOVUPD Y2, (R9)(DX*8)
	VMOVUPD Y3, 32(R9)(DX*8)
	ADDQ $8, AX
	ADDQ $8, DX
	CMPQ DX, R8
	JNE sumProdPAVX2_w0
	XORQ DX, DX
sumProdPAVX2_w0:
	CMPQ AX, CX
	JLT sumProdPAVX2_loop
	VZEROUPPER
	RET

// func dotsPAVX2(sh, shx *float64, ts int, gr, gain *float32, tc int, x *float32, n int)
TEXT ·dotsPAVX2(SB), NOSPLIT, $0-64
	MOVQ sh+0(FP), DI
	MOVQ shx+8(FP), R8
	MOVQ ts+16(FP), R9
	MOVQ gr+24(FP), SI
	MOVQ gain+32(FP), BX
	MOVQ tc+40(FP), R10
	MOVQ x+48(FP), R11
	MOVQ n+56(FP), CX
	XORQ AX, AX
	XORQ DX, DX
	XORQ R12, R12
dotsPAVX2_loop:
	VCVTPS2PD (SI)(AX*4), Y0
	VCVTPS2PD 16(SI)(AX*4), Y1
	VCVTPS2PD (BX)(R12*4), Y2
	VCVTPS2PD 16(BX)(R12*4), Y3
	VMULPD Y2, Y0, Y0
	VMULPD Y3, Y1, Y1
	VCVTPS2PD (R11)(AX*4), Y2
	VCVTPS2PD 16(R11)(AX*4), Y3
	VMULPD Y0, Y2, Y2
	VMULPD Y1, Y3, Y3
	VADDPD (DI)(DX*8), Y0, Y0
	VADDPD 32(DI)(DX*8), Y1, Y1
	VMOVUPD Y0, (DI)(DX*8)
	VMOVUPD Y1, 32(DI)(DX*8)
	VADDPD (R8)(DX*8), Y2, Y2
	VADDPD 32(R8)(DX*8), Y3, Y3
	VMOVUPD Y2, (R8)(DX*8)
	VMOVUPD Y3, 32(R8)(DX*8)
	ADDQ $8, AX
	ADDQ $8, DX
	CMPQ DX, R9
	JNE dotsPAVX2_w0
	XORQ DX, DX
dotsPAVX2_w0:
	ADDQ $8, R12
	CMPQ R12, R10
	JNE dotsPAVX2_w1
	XORQ R12, R12
dotsPAVX2_w1:
	CMPQ AX, CX
	JLT dotsPAVX2_loop
	VZEROUPPER
	RET

// func gradXPAVX2(dst, gr, gain, x *float32, tc int, a, b, r *float64, ts, n int)
TEXT ·gradXPAVX2(SB), NOSPLIT, $0-80
	MOVQ dst+0(FP), DI
	MOVQ gr+8(FP), SI
	MOVQ gain+16(FP), BX
	MOVQ x+24(FP), R11
	MOVQ tc+32(FP), R13
	MOVQ a+40(FP), R8
	MOVQ b+48(FP), R9
	MOVQ r+56(FP), R10
	MOVQ n+72(FP), CX
	XORQ AX, AX
	XORQ DX, DX
	XORQ R12, R12
gradXPAVX2_loop:
	VCVTPS2PD (SI)(AX*4), Y0
	VCVTPS2PD 16(SI)(AX*4), Y1
	VCVTPS2PD (BX)(R12*4), Y2
	VCVTPS2PD 16(BX)(R12*4), Y3
	VMULPD Y2, Y0, Y0
	VMULPD Y3, Y1, Y1
	VSUBPD (R8)(DX*8), Y0, Y0
	VSUBPD 32(R8)(DX*8), Y1, Y1
	VCVTPS2PD (R11)(AX*4), Y2
	VCVTPS2PD 16(R11)(AX*4), Y3
	VMULPD (R9)(DX*8), Y2, Y2
	VMULPD 32(R9)(DX*8), Y3, Y3
	VSUBPD Y2, Y0, Y0
	VSUBPD Y3, Y1, Y1
	VMULPD (R10)(DX*8), Y0, Y0
	VMULPD 32(R10)(DX*8), Y1, Y1
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y1, X1
	VMOVUPS X0, (DI)(AX*4)
	VMOVUPS X1, 16(DI)(AX*4)
	ADDQ $8, AX
	ADDQ $8, DX
	CMPQ DX, ts+64(FP)
	JNE gradXPAVX2_w0
	XORQ DX, DX
gradXPAVX2_w0:
	ADDQ $8, R12
	CMPQ R12, R13
	JNE gradXPAVX2_w1
	XORQ R12, R12
gradXPAVX2_w1:
	CMPQ AX, CX
	JLT gradXPAVX2_loop
	VZEROUPPER
	RET

// func addStridedAVX2(dst *float32, ds int, src *float32, ss, width, count int)
// width (a multiple of 8) values of each of count runs; count ≥ 1.
TEXT ·addStridedAVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ds+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ ss+24(FP), R9
	SHLQ $2, R9
	MOVQ width+32(FP), R10
	MOVQ count+40(FP), CX
addStridedAVX2_row:
	XORQ AX, AX
addStridedAVX2_col:
	VMOVUPS (DI)(AX*4), Y0
	VADDPS (SI)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, R10
	JLT addStridedAVX2_col
	ADDQ R8, DI
	ADDQ R9, SI
	DECQ CX
	JNZ addStridedAVX2_row
	VZEROUPPER
	RET

// func sumRowsAVX2(acc *float32, t int, x *float32, n int)
TEXT ·sumRowsAVX2(SB), NOSPLIT, $0-32
	MOVQ acc+0(FP), DI
	MOVQ t+8(FP), R8
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	XORQ AX, AX
	XORQ DX, DX
	CMPQ R8, $8
	JEQ sumRowsAVX2_8
	CMPQ R8, $16
	JEQ sumRowsAVX2_16
sumRowsAVX2_loop:
	VMOVUPS (SI)(AX*4), Y0
	VADDPS (DI)(DX*4), Y0, Y0
	VMOVUPS Y0, (DI)(DX*4)
	ADDQ $8, AX
	ADDQ $8, DX
	CMPQ DX, R8
	JNE sumRowsAVX2_w0
	XORQ DX, DX
sumRowsAVX2_w0:
	CMPQ AX, CX
	JLT sumRowsAVX2_loop
	VZEROUPPER
	RET

// Periods 8 and 16: the accumulators stay in registers.
sumRowsAVX2_8:
	VMOVUPS (DI), Y1
sumRowsAVX2_8loop:
	VADDPS (SI)(AX*4), Y1, Y1
	ADDQ $8, AX
	CMPQ AX, CX
	JLT sumRowsAVX2_8loop
	VMOVUPS Y1, (DI)
	VZEROUPPER
	RET

sumRowsAVX2_16:
	VMOVUPS (DI), Y1
	VMOVUPS 32(DI), Y2
sumRowsAVX2_16loop:
	VADDPS (SI)(AX*4), Y1, Y1
	ADDQ $8, AX
	CMPQ AX, CX
	JGE sumRowsAVX2_16done
	VADDPS (SI)(AX*4), Y2, Y2
	ADDQ $8, AX
	CMPQ AX, CX
	JLT sumRowsAVX2_16loop
sumRowsAVX2_16done:
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	VZEROUPPER
	RET
