//go:build !purego

#include "textflag.h"

// func addQuantizedAVX512(lo []uint64, hi []int64, delta []float32, f float32, s1, s2 float64)
//
// For i < len(delta) (a multiple of 16), eight lanes at a time, two blocks
// per iteration:
//   x = float32(delta[i]·f)                     VMULPS (float32 rounding)
//   v = (float64(x)·s1)·s2                      VCVTPS2PD (exact), two VMULPD
//   v = max(min(v, L), −L), L = 2⁶³ − 1024      VMINPD, VMAXPD
//   q = round(v), to nearest, ties to even      VCVTPD2QQ.RN_SAE
//   lo[i] += q (wrapping); where the signed add overflowed, hi[i] ± 1
// Clamping to the integers ±L before rounding equals rounding then
// clamping (rounding is monotone and fixes integers), so each coordinate
// gets addQuantizedGo's bits. The hi words are read and written only in an
// iteration where some lane overflowed.
TEXT ·addQuantizedAVX512(SB), NOSPLIT, $0-96
	MOVQ lo_base+0(FP), DI
	MOVQ hi_base+24(FP), R8
	MOVQ delta_base+48(FP), SI
	MOVQ delta_len+56(FP), R11
	VBROADCASTSS f+72(FP), Y15
	VBROADCASTSD s1+80(FP), Z14
	VBROADCASTSD s2+88(FP), Z13
	MOVQ $0x43DFFFFFFFFFFFFF, AX // L
	VPBROADCASTQ AX, Z12
	MOVQ $0xC3DFFFFFFFFFFFFF, AX // −L
	VPBROADCASTQ AX, Z11
	MOVQ $1, AX
	VPBROADCASTQ AX, Z10
	XORQ CX, CX
	CMPQ R11, $0
	JE   done

loop:
	VMULPS (SI)(CX*4), Y15, Y0
	VMULPS 32(SI)(CX*4), Y15, Y4
	VCVTPS2PD Y0, Z0
	VCVTPS2PD Y4, Z4
	VMULPD Z14, Z0, Z0
	VMULPD Z14, Z4, Z4
	VMULPD Z13, Z0, Z0
	VMULPD Z13, Z4, Z4
	VMINPD Z12, Z0, Z0
	VMINPD Z12, Z4, Z4
	VMAXPD Z11, Z0, Z0
	VMAXPD Z11, Z4, Z4
	VCVTPD2QQ.RN_SAE Z0, Z1 // q
	VCVTPD2QQ.RN_SAE Z4, Z5

	// n = lo + q; overflow where (lo ^ n) & (q ^ n) < 0
	VMOVDQU64 (DI)(CX*8), Z2
	VMOVDQU64 64(DI)(CX*8), Z6
	VPADDQ Z1, Z2, Z3
	VPADDQ Z5, Z6, Z7
	VMOVDQU64 Z3, (DI)(CX*8)
	VMOVDQU64 Z7, 64(DI)(CX*8)
	VPXORQ Z3, Z2, Z2
	VPXORQ Z7, Z6, Z6
	VPXORQ Z3, Z1, Z8
	VPXORQ Z7, Z5, Z9
	VPANDQ Z8, Z2, Z2
	VPANDQ Z9, Z6, Z6
	VPMOVQ2M Z2, K1
	VPMOVQ2M Z6, K2
	KORW K1, K2, K3
	KORTESTW K3, K3
	JNZ  carry

next:
	ADDQ $16, CX
	CMPQ CX, R11
	JB   loop

done:
	VZEROUPPER
	RET

carry: // hi += 1 where q ≥ 0, −1 where q < 0, in the overflowed lanes
	VPSRAQ $63, Z1, Z1
	VPSRAQ $63, Z5, Z5
	VPORQ Z10, Z1, Z1
	VPORQ Z10, Z5, Z5
	VMOVDQU64 (R8)(CX*8), Z2
	VMOVDQU64 64(R8)(CX*8), Z6
	VPADDQ Z1, Z2, K1, Z2
	VPADDQ Z5, Z6, K2, Z6
	VMOVDQU64 Z2, (R8)(CX*8)
	VMOVDQU64 Z6, 64(R8)(CX*8)
	JMP  next

// func sumSquaresAVX512(lanes *[32]float64, x []float32)
//
// lanes[i mod 32] += float64(x[i])² for i < len(x) (a multiple of 32), each
// lane in order of i: four accumulators of eight lanes (the products are
// exact; each sum is rounded, as laneSumSquares's Go loop does).
TEXT ·sumSquaresAVX512(SB), NOSPLIT, $0-32
	MOVQ lanes+0(FP), DI
	MOVQ x_base+8(FP), SI
	MOVQ x_len+16(FP), R11
	VMOVUPD 0(DI), Z0
	VMOVUPD 64(DI), Z1
	VMOVUPD 128(DI), Z2
	VMOVUPD 192(DI), Z3
	XORQ CX, CX
	CMPQ R11, $0
	JE   sqdone

sqloop:
	VCVTPS2PD (SI)(CX*4), Z4
	VCVTPS2PD 32(SI)(CX*4), Z5
	VCVTPS2PD 64(SI)(CX*4), Z6
	VCVTPS2PD 96(SI)(CX*4), Z7
	VMULPD Z4, Z4, Z4
	VMULPD Z5, Z5, Z5
	VMULPD Z6, Z6, Z6
	VMULPD Z7, Z7, Z7
	VADDPD Z4, Z0, Z0
	VADDPD Z5, Z1, Z1
	VADDPD Z6, Z2, Z2
	VADDPD Z7, Z3, Z3
	ADDQ $32, CX
	CMPQ CX, R11
	JB   sqloop

sqdone:
	VMOVUPD Z0, 0(DI)
	VMOVUPD Z1, 64(DI)
	VMOVUPD Z2, 128(DI)
	VMOVUPD Z3, 192(DI)
	VZEROUPPER
	RET
