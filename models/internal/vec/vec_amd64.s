#include "textflag.h"

// AVX2 loops of package vec (see vec.go and gelu.go): the same float32
// operations as the Go code, in the same order, 8 lanes at a time (no FMA).

DATA vc<>+0(SB)/4, $0x3fb8aa3b
DATA vc<>+4(SB)/4, $0x3fb8aa3b
DATA vc<>+8(SB)/4, $0x3fb8aa3b
DATA vc<>+12(SB)/4, $0x3fb8aa3b
DATA vc<>+16(SB)/4, $0x3fb8aa3b
DATA vc<>+20(SB)/4, $0x3fb8aa3b
DATA vc<>+24(SB)/4, $0x3fb8aa3b
DATA vc<>+28(SB)/4, $0x3fb8aa3b
DATA vc<>+32(SB)/4, $0x80000000
DATA vc<>+36(SB)/4, $0x80000000
DATA vc<>+40(SB)/4, $0x80000000
DATA vc<>+44(SB)/4, $0x80000000
DATA vc<>+48(SB)/4, $0x80000000
DATA vc<>+52(SB)/4, $0x80000000
DATA vc<>+56(SB)/4, $0x80000000
DATA vc<>+60(SB)/4, $0x80000000
DATA vc<>+64(SB)/4, $0x3f000000
DATA vc<>+68(SB)/4, $0x3f000000
DATA vc<>+72(SB)/4, $0x3f000000
DATA vc<>+76(SB)/4, $0x3f000000
DATA vc<>+80(SB)/4, $0x3f000000
DATA vc<>+84(SB)/4, $0x3f000000
DATA vc<>+88(SB)/4, $0x3f000000
DATA vc<>+92(SB)/4, $0x3f000000
DATA vc<>+96(SB)/4, $0x3f318000
DATA vc<>+100(SB)/4, $0x3f318000
DATA vc<>+104(SB)/4, $0x3f318000
DATA vc<>+108(SB)/4, $0x3f318000
DATA vc<>+112(SB)/4, $0x3f318000
DATA vc<>+116(SB)/4, $0x3f318000
DATA vc<>+120(SB)/4, $0x3f318000
DATA vc<>+124(SB)/4, $0x3f318000
DATA vc<>+128(SB)/4, $0xb95e8083
DATA vc<>+132(SB)/4, $0xb95e8083
DATA vc<>+136(SB)/4, $0xb95e8083
DATA vc<>+140(SB)/4, $0xb95e8083
DATA vc<>+144(SB)/4, $0xb95e8083
DATA vc<>+148(SB)/4, $0xb95e8083
DATA vc<>+152(SB)/4, $0xb95e8083
DATA vc<>+156(SB)/4, $0xb95e8083
DATA vc<>+160(SB)/4, $0x39506967
DATA vc<>+164(SB)/4, $0x39506967
DATA vc<>+168(SB)/4, $0x39506967
DATA vc<>+172(SB)/4, $0x39506967
DATA vc<>+176(SB)/4, $0x39506967
DATA vc<>+180(SB)/4, $0x39506967
DATA vc<>+184(SB)/4, $0x39506967
DATA vc<>+188(SB)/4, $0x39506967
DATA vc<>+192(SB)/4, $0x3ab743ce
DATA vc<>+196(SB)/4, $0x3ab743ce
DATA vc<>+200(SB)/4, $0x3ab743ce
DATA vc<>+204(SB)/4, $0x3ab743ce
DATA vc<>+208(SB)/4, $0x3ab743ce
DATA vc<>+212(SB)/4, $0x3ab743ce
DATA vc<>+216(SB)/4, $0x3ab743ce
DATA vc<>+220(SB)/4, $0x3ab743ce
DATA vc<>+224(SB)/4, $0x3c088908
DATA vc<>+228(SB)/4, $0x3c088908
DATA vc<>+232(SB)/4, $0x3c088908
DATA vc<>+236(SB)/4, $0x3c088908
DATA vc<>+240(SB)/4, $0x3c088908
DATA vc<>+244(SB)/4, $0x3c088908
DATA vc<>+248(SB)/4, $0x3c088908
DATA vc<>+252(SB)/4, $0x3c088908
DATA vc<>+256(SB)/4, $0x3d2aa9c1
DATA vc<>+260(SB)/4, $0x3d2aa9c1
DATA vc<>+264(SB)/4, $0x3d2aa9c1
DATA vc<>+268(SB)/4, $0x3d2aa9c1
DATA vc<>+272(SB)/4, $0x3d2aa9c1
DATA vc<>+276(SB)/4, $0x3d2aa9c1
DATA vc<>+280(SB)/4, $0x3d2aa9c1
DATA vc<>+284(SB)/4, $0x3d2aa9c1
DATA vc<>+288(SB)/4, $0x3e2aaaaa
DATA vc<>+292(SB)/4, $0x3e2aaaaa
DATA vc<>+296(SB)/4, $0x3e2aaaaa
DATA vc<>+300(SB)/4, $0x3e2aaaaa
DATA vc<>+304(SB)/4, $0x3e2aaaaa
DATA vc<>+308(SB)/4, $0x3e2aaaaa
DATA vc<>+312(SB)/4, $0x3e2aaaaa
DATA vc<>+316(SB)/4, $0x3e2aaaaa
DATA vc<>+320(SB)/4, $0x3f000000
DATA vc<>+324(SB)/4, $0x3f000000
DATA vc<>+328(SB)/4, $0x3f000000
DATA vc<>+332(SB)/4, $0x3f000000
DATA vc<>+336(SB)/4, $0x3f000000
DATA vc<>+340(SB)/4, $0x3f000000
DATA vc<>+344(SB)/4, $0x3f000000
DATA vc<>+348(SB)/4, $0x3f000000
DATA vc<>+352(SB)/4, $0x3f800000
DATA vc<>+356(SB)/4, $0x3f800000
DATA vc<>+360(SB)/4, $0x3f800000
DATA vc<>+364(SB)/4, $0x3f800000
DATA vc<>+368(SB)/4, $0x3f800000
DATA vc<>+372(SB)/4, $0x3f800000
DATA vc<>+376(SB)/4, $0x3f800000
DATA vc<>+380(SB)/4, $0x3f800000
DATA vc<>+384(SB)/4, $0x7f
DATA vc<>+388(SB)/4, $0x7f
DATA vc<>+392(SB)/4, $0x7f
DATA vc<>+396(SB)/4, $0x7f
DATA vc<>+400(SB)/4, $0x7f
DATA vc<>+404(SB)/4, $0x7f
DATA vc<>+408(SB)/4, $0x7f
DATA vc<>+412(SB)/4, $0x7f
DATA vc<>+416(SB)/4, $0xc2ae999a
DATA vc<>+420(SB)/4, $0xc2ae999a
DATA vc<>+424(SB)/4, $0xc2ae999a
DATA vc<>+428(SB)/4, $0xc2ae999a
DATA vc<>+432(SB)/4, $0xc2ae999a
DATA vc<>+436(SB)/4, $0xc2ae999a
DATA vc<>+440(SB)/4, $0xc2ae999a
DATA vc<>+444(SB)/4, $0xc2ae999a
DATA vc<>+448(SB)/4, $0x42b0999a
DATA vc<>+452(SB)/4, $0x42b0999a
DATA vc<>+456(SB)/4, $0x42b0999a
DATA vc<>+460(SB)/4, $0x42b0999a
DATA vc<>+464(SB)/4, $0x42b0999a
DATA vc<>+468(SB)/4, $0x42b0999a
DATA vc<>+472(SB)/4, $0x42b0999a
DATA vc<>+476(SB)/4, $0x42b0999a
DATA vc<>+480(SB)/4, $0x7f800000
DATA vc<>+484(SB)/4, $0x7f800000
DATA vc<>+488(SB)/4, $0x7f800000
DATA vc<>+492(SB)/4, $0x7f800000
DATA vc<>+496(SB)/4, $0x7f800000
DATA vc<>+500(SB)/4, $0x7f800000
DATA vc<>+504(SB)/4, $0x7f800000
DATA vc<>+508(SB)/4, $0x7f800000
DATA vc<>+512(SB)/4, $0xc0000000
DATA vc<>+516(SB)/4, $0xc0000000
DATA vc<>+520(SB)/4, $0xc0000000
DATA vc<>+524(SB)/4, $0xc0000000
DATA vc<>+528(SB)/4, $0xc0000000
DATA vc<>+532(SB)/4, $0xc0000000
DATA vc<>+536(SB)/4, $0xc0000000
DATA vc<>+540(SB)/4, $0xc0000000
DATA vc<>+544(SB)/4, $0xbf000000
DATA vc<>+548(SB)/4, $0xbf000000
DATA vc<>+552(SB)/4, $0xbf000000
DATA vc<>+556(SB)/4, $0xbf000000
DATA vc<>+560(SB)/4, $0xbf000000
DATA vc<>+564(SB)/4, $0xbf000000
DATA vc<>+568(SB)/4, $0xbf000000
DATA vc<>+572(SB)/4, $0xbf000000
DATA vc<>+576(SB)/4, $0x3e800000
DATA vc<>+580(SB)/4, $0x3e800000
DATA vc<>+584(SB)/4, $0x3e800000
DATA vc<>+588(SB)/4, $0x3e800000
DATA vc<>+592(SB)/4, $0x3e800000
DATA vc<>+596(SB)/4, $0x3e800000
DATA vc<>+600(SB)/4, $0x3e800000
DATA vc<>+604(SB)/4, $0x3e800000
DATA vc<>+608(SB)/4, $0x3ecc422a
DATA vc<>+612(SB)/4, $0x3ecc422a
DATA vc<>+616(SB)/4, $0x3ecc422a
DATA vc<>+620(SB)/4, $0x3ecc422a
DATA vc<>+624(SB)/4, $0x3ecc422a
DATA vc<>+628(SB)/4, $0x3ecc422a
DATA vc<>+632(SB)/4, $0x3ecc422a
DATA vc<>+636(SB)/4, $0x3ecc422a
DATA vc<>+640(SB)/4, $0x3dcc67e7
DATA vc<>+644(SB)/4, $0x3dcc67e7
DATA vc<>+648(SB)/4, $0x3dcc67e7
DATA vc<>+652(SB)/4, $0x3dcc67e7
DATA vc<>+656(SB)/4, $0x3dcc67e7
DATA vc<>+660(SB)/4, $0x3dcc67e7
DATA vc<>+664(SB)/4, $0x3dcc67e7
DATA vc<>+668(SB)/4, $0x3dcc67e7
DATA vc<>+672(SB)/4, $0x3dc96c21
DATA vc<>+676(SB)/4, $0x3dc96c21
DATA vc<>+680(SB)/4, $0x3dc96c21
DATA vc<>+684(SB)/4, $0x3dc96c21
DATA vc<>+688(SB)/4, $0x3dc96c21
DATA vc<>+692(SB)/4, $0x3dc96c21
DATA vc<>+696(SB)/4, $0x3dc96c21
DATA vc<>+700(SB)/4, $0x3dc96c21
DATA vc<>+704(SB)/4, $0x3dd6d694
DATA vc<>+708(SB)/4, $0x3dd6d694
DATA vc<>+712(SB)/4, $0x3dd6d694
DATA vc<>+716(SB)/4, $0x3dd6d694
DATA vc<>+720(SB)/4, $0x3dd6d694
DATA vc<>+724(SB)/4, $0x3dd6d694
DATA vc<>+728(SB)/4, $0x3dd6d694
DATA vc<>+732(SB)/4, $0x3dd6d694
DATA vc<>+736(SB)/4, $0x3ce97b96
DATA vc<>+740(SB)/4, $0x3ce97b96
DATA vc<>+744(SB)/4, $0x3ce97b96
DATA vc<>+748(SB)/4, $0x3ce97b96
DATA vc<>+752(SB)/4, $0x3ce97b96
DATA vc<>+756(SB)/4, $0x3ce97b96
DATA vc<>+760(SB)/4, $0x3ce97b96
DATA vc<>+764(SB)/4, $0x3ce97b96
DATA vc<>+768(SB)/4, $0x3e59172d
DATA vc<>+772(SB)/4, $0x3e59172d
DATA vc<>+776(SB)/4, $0x3e59172d
DATA vc<>+780(SB)/4, $0x3e59172d
DATA vc<>+784(SB)/4, $0x3e59172d
DATA vc<>+788(SB)/4, $0x3e59172d
DATA vc<>+792(SB)/4, $0x3e59172d
DATA vc<>+796(SB)/4, $0x3e59172d
DATA vc<>+800(SB)/4, $0xbe61c127
DATA vc<>+804(SB)/4, $0xbe61c127
DATA vc<>+808(SB)/4, $0xbe61c127
DATA vc<>+812(SB)/4, $0xbe61c127
DATA vc<>+816(SB)/4, $0xbe61c127
DATA vc<>+820(SB)/4, $0xbe61c127
DATA vc<>+824(SB)/4, $0xbe61c127
DATA vc<>+828(SB)/4, $0xbe61c127
DATA vc<>+832(SB)/4, $0x3e9e23cd
DATA vc<>+836(SB)/4, $0x3e9e23cd
DATA vc<>+840(SB)/4, $0x3e9e23cd
DATA vc<>+844(SB)/4, $0x3e9e23cd
DATA vc<>+848(SB)/4, $0x3e9e23cd
DATA vc<>+852(SB)/4, $0x3e9e23cd
DATA vc<>+856(SB)/4, $0x3e9e23cd
DATA vc<>+860(SB)/4, $0x3e9e23cd
DATA vc<>+864(SB)/4, $0xbe22c3f0
DATA vc<>+868(SB)/4, $0xbe22c3f0
DATA vc<>+872(SB)/4, $0xbe22c3f0
DATA vc<>+876(SB)/4, $0xbe22c3f0
DATA vc<>+880(SB)/4, $0xbe22c3f0
DATA vc<>+884(SB)/4, $0xbe22c3f0
DATA vc<>+888(SB)/4, $0xbe22c3f0
DATA vc<>+892(SB)/4, $0xbe22c3f0
DATA vc<>+896(SB)/4, $0x3cdd0c6d
DATA vc<>+900(SB)/4, $0x3cdd0c6d
DATA vc<>+904(SB)/4, $0x3cdd0c6d
DATA vc<>+908(SB)/4, $0x3cdd0c6d
DATA vc<>+912(SB)/4, $0x3cdd0c6d
DATA vc<>+916(SB)/4, $0x3cdd0c6d
DATA vc<>+920(SB)/4, $0x3cdd0c6d
DATA vc<>+924(SB)/4, $0x3cdd0c6d
GLOBL vc<>(SB), RODATA|NOPTR, $928

// func expAVX2(dst, x *float32, n int, shift float32)
TEXT ·expAVX2(SB), NOSPLIT, $0-28
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS shift+24(FP), Y7
expAVX2_loop:
	VMOVUPS (SI), Y0
	VSUBPS Y7, Y0, Y0
	VMULPS vc<>+0(SB), Y0, Y1
	VANDPS vc<>+32(SB), Y1, Y2
	VORPS vc<>+64(SB), Y2, Y2
	VADDPS Y2, Y1, Y1
	VCVTTPS2DQ Y1, Y1
	VCVTDQ2PS Y1, Y2
	VMULPS vc<>+96(SB), Y2, Y3
	VSUBPS Y3, Y0, Y3
	VMULPS vc<>+128(SB), Y2, Y4
	VSUBPS Y4, Y3, Y3
	VMOVUPS vc<>+160(SB), Y4
	VMULPS Y3, Y4, Y4
	VADDPS vc<>+192(SB), Y4, Y4
	VMULPS Y3, Y4, Y4
	VADDPS vc<>+224(SB), Y4, Y4
	VMULPS Y3, Y4, Y4
	VADDPS vc<>+256(SB), Y4, Y4
	VMULPS Y3, Y4, Y4
	VADDPS vc<>+288(SB), Y4, Y4
	VMULPS Y3, Y4, Y4
	VADDPS vc<>+320(SB), Y4, Y4
	VMULPS Y3, Y4, Y4
	VMULPS Y3, Y4, Y4
	VADDPS Y3, Y4, Y4
	VADDPS vc<>+352(SB), Y4, Y4
	VPADDD vc<>+384(SB), Y1, Y1
	VPSLLD $23, Y1, Y1
	VMULPS Y1, Y4, Y4
	VCMPPS $0x11, vc<>+416(SB), Y0, Y5
	VANDNPS Y4, Y5, Y4
	VCMPPS $0x1e, vc<>+448(SB), Y0, Y5
	VBLENDVPS Y5, vc<>+480(SB), Y4, Y4
	VCMPPS $3, Y0, Y0, Y5
	VBLENDVPS Y5, Y0, Y4, Y4
	VMOVUPS Y4, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ expAVX2_loop
	VZEROUPPER
	RET

// func sigmoidAVX2(dst, x *float32, n int)
TEXT ·sigmoidAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
sigmoidAVX2_loop:
	VMOVUPS (SI), Y0
	VXORPS vc<>+32(SB), Y0, Y0
	VMULPS vc<>+0(SB), Y0, Y1
	VANDPS vc<>+32(SB), Y1, Y2
	VORPS vc<>+64(SB), Y2, Y2
	VADDPS Y2, Y1, Y1
	VCVTTPS2DQ Y1, Y1
	VCVTDQ2PS Y1, Y2
	VMULPS vc<>+96(SB), Y2, Y3
	VSUBPS Y3, Y0, Y3
	VMULPS vc<>+128(SB), Y2, Y4
	VSUBPS Y4, Y3, Y3
	VMOVUPS vc<>+160(SB), Y4
	VMULPS Y3, Y4, Y4
	VADDPS vc<>+192(SB), Y4, Y4
	VMULPS Y3, Y4, Y4
	VADDPS vc<>+224(SB), Y4, Y4
	VMULPS Y3, Y4, Y4
	VADDPS vc<>+256(SB), Y4, Y4
	VMULPS Y3, Y4, Y4
	VADDPS vc<>+288(SB), Y4, Y4
	VMULPS Y3, Y4, Y4
	VADDPS vc<>+320(SB), Y4, Y4
	VMULPS Y3, Y4, Y4
	VMULPS Y3, Y4, Y4
	VADDPS Y3, Y4, Y4
	VADDPS vc<>+352(SB), Y4, Y4
	VPADDD vc<>+384(SB), Y1, Y1
	VPSLLD $23, Y1, Y1
	VMULPS Y1, Y4, Y4
	VCMPPS $0x11, vc<>+416(SB), Y0, Y5
	VANDNPS Y4, Y5, Y4
	VCMPPS $0x1e, vc<>+448(SB), Y0, Y5
	VBLENDVPS Y5, vc<>+480(SB), Y4, Y4
	VCMPPS $3, Y0, Y0, Y5
	VBLENDVPS Y5, Y0, Y4, Y4
	VADDPS vc<>+352(SB), Y4, Y4
	VMOVUPS vc<>+352(SB), Y6
	VDIVPS Y4, Y6, Y4
	VMOVUPS Y4, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ sigmoidAVX2_loop
	VZEROUPPER
	RET

// func tanhAVX2(dst, x *float32, n int)
TEXT ·tanhAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
tanhAVX2_loop:
	VMOVUPS (SI), Y6
	VMOVUPS vc<>+32(SB), Y7
	VANDNPS Y6, Y7, Y0
	VMULPS vc<>+512(SB), Y0, Y0
	VMULPS vc<>+0(SB), Y0, Y1
	VANDPS vc<>+32(SB), Y1, Y2
	VORPS vc<>+64(SB), Y2, Y2
	VADDPS Y2, Y1, Y1
	VCVTTPS2DQ Y1, Y1
	VCVTDQ2PS Y1, Y2
	VMULPS vc<>+96(SB), Y2, Y3
	VSUBPS Y3, Y0, Y3
	VMULPS vc<>+128(SB), Y2, Y4
	VSUBPS Y4, Y3, Y3
	VMOVUPS vc<>+160(SB), Y4
	VMULPS Y3, Y4, Y4
	VADDPS vc<>+192(SB), Y4, Y4
	VMULPS Y3, Y4, Y4
	VADDPS vc<>+224(SB), Y4, Y4
	VMULPS Y3, Y4, Y4
	VADDPS vc<>+256(SB), Y4, Y4
	VMULPS Y3, Y4, Y4
	VADDPS vc<>+288(SB), Y4, Y4
	VMULPS Y3, Y4, Y4
	VADDPS vc<>+320(SB), Y4, Y4
	VMULPS Y3, Y4, Y4
	VMULPS Y3, Y4, Y4
	VADDPS Y3, Y4, Y4
	VADDPS vc<>+352(SB), Y4, Y4
	VPADDD vc<>+384(SB), Y1, Y1
	VPSLLD $23, Y1, Y1
	VMULPS Y1, Y4, Y4
	VCMPPS $0x11, vc<>+416(SB), Y0, Y5
	VANDNPS Y4, Y5, Y4
	VCMPPS $0x1e, vc<>+448(SB), Y0, Y5
	VBLENDVPS Y5, vc<>+480(SB), Y4, Y4
	VCMPPS $3, Y0, Y0, Y5
	VBLENDVPS Y5, Y0, Y4, Y4
	VMOVUPS vc<>+352(SB), Y1
	VSUBPS Y4, Y1, Y2
	VADDPS Y4, Y1, Y3
	VDIVPS Y3, Y2, Y2
	VANDPS vc<>+32(SB), Y6, Y6
	VORPS Y6, Y2, Y2
	VMOVUPS Y2, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ tanhAVX2_loop
	VZEROUPPER
	RET

// func reluAVX2(dst, x *float32, n int)
TEXT ·reluAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPS Y7, Y7, Y7
reluAVX2_loop:
	VMOVUPS (SI), Y0
	VMAXPS Y0, Y7, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ reluAVX2_loop
	VZEROUPPER
	RET

// func reluGradAVX2(dst, y, gr *float32, n int)
TEXT ·reluGradAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ gr+16(FP), DX
	MOVQ n+24(FP), CX
	VXORPS Y7, Y7, Y7
reluGradAVX2_loop:
	VMOVUPS (SI), Y0
	VCMPPS $0x1e, Y7, Y0, Y0
	VANDPS (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ reluGradAVX2_loop
	VZEROUPPER
	RET

// func addAVX2(dst, x *float32, n int)
TEXT ·addAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
addAVX2_loop:
	VMOVUPS (DI), Y0
	VADDPS (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ addAVX2_loop
	VZEROUPPER
	RET

// func mulAVX2(dst, x, y *float32, n int)
TEXT ·mulAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DX
	MOVQ n+24(FP), CX
mulAVX2_loop:
	VMOVUPS (SI), Y0
	VMULPS (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ mulAVX2_loop
	VZEROUPPER
	RET

// func axpySubAVX2(dst, b, p *float32, a float32, x *float32, n int)
TEXT ·axpySubAVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ b+8(FP), R8
	MOVQ p+16(FP), DX
	VBROADCASTSS a+24(FP), Y7
	MOVQ x+32(FP), SI
	MOVQ n+40(FP), CX
axpySubAVX2_loop:
	VMULPS (SI), Y7, Y0
	VADDPS (DX), Y0, Y0
	VMOVUPS Y0, (DX)
	VMOVUPS (R8), Y1
	VSUBPS Y0, Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, R8
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ axpySubAVX2_loop
	VZEROUPPER
	RET

// func axpyAVX2(dst *float32, a float32, x *float32, n int)
TEXT ·axpyAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	VBROADCASTSS a+8(FP), Y7
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
axpyAVX2_loop:
	VMULPS (SI), Y7, Y0
	VADDPS (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ axpyAVX2_loop
	VZEROUPPER
	RET

// func scaleAVX2(dst *float32, a float32, x *float32, n int)
TEXT ·scaleAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	VBROADCASTSS a+8(FP), Y7
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
scaleAVX2_loop:
	VMULPS (SI), Y7, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ scaleAVX2_loop
	VZEROUPPER
	RET

// NORMF sets Y3 = Φ(x) and Y4 = e^(−x²/2) for x in Y8, as normf in
// gelu.go (clobbers Y0–Y5, Y7, Y9).
#define NORMF \
	VMOVUPS vc<>+32(SB), Y7; \
	VANDNPS Y8, Y7, Y9; \
	VMULPS Y9, Y9, Y0; \
	VMULPS vc<>+544(SB), Y0, Y0; \
	VMULPS vc<>+0(SB), Y0, Y1; \
	VANDPS vc<>+32(SB), Y1, Y2; \
	VORPS vc<>+64(SB), Y2, Y2; \
	VADDPS Y2, Y1, Y1; \
	VCVTTPS2DQ Y1, Y1; \
	VCVTDQ2PS Y1, Y2; \
	VMULPS vc<>+96(SB), Y2, Y3; \
	VSUBPS Y3, Y0, Y3; \
	VMULPS vc<>+128(SB), Y2, Y4; \
	VSUBPS Y4, Y3, Y3; \
	VMOVUPS vc<>+160(SB), Y4; \
	VMULPS Y3, Y4, Y4; \
	VADDPS vc<>+192(SB), Y4, Y4; \
	VMULPS Y3, Y4, Y4; \
	VADDPS vc<>+224(SB), Y4, Y4; \
	VMULPS Y3, Y4, Y4; \
	VADDPS vc<>+256(SB), Y4, Y4; \
	VMULPS Y3, Y4, Y4; \
	VADDPS vc<>+288(SB), Y4, Y4; \
	VMULPS Y3, Y4, Y4; \
	VADDPS vc<>+320(SB), Y4, Y4; \
	VMULPS Y3, Y4, Y4; \
	VMULPS Y3, Y4, Y4; \
	VADDPS Y3, Y4, Y4; \
	VADDPS vc<>+352(SB), Y4, Y4; \
	VPADDD vc<>+384(SB), Y1, Y1; \
	VPSLLD $23, Y1, Y1; \
	VMULPS Y1, Y4, Y4; \
	VCMPPS $0x11, vc<>+416(SB), Y0, Y5; \
	VANDNPS Y4, Y5, Y4; \
	VCMPPS $0x1e, vc<>+448(SB), Y0, Y5; \
	VBLENDVPS Y5, vc<>+480(SB), Y4, Y4; \
	VCMPPS $3, Y0, Y0, Y5; \
	VBLENDVPS Y5, Y0, Y4, Y4; \
	VMULPS vc<>+576(SB), Y9, Y1; \
	VADDPS vc<>+352(SB), Y1, Y1; \
	VMOVUPS vc<>+352(SB), Y2; \
	VDIVPS Y1, Y2, Y1; \
	VMOVUPS vc<>+896(SB), Y2; \
	VMULPS Y1, Y2, Y2; \
	VADDPS vc<>+864(SB), Y2, Y2; \
	VMULPS Y1, Y2, Y2; \
	VADDPS vc<>+832(SB), Y2, Y2; \
	VMULPS Y1, Y2, Y2; \
	VADDPS vc<>+800(SB), Y2, Y2; \
	VMULPS Y1, Y2, Y2; \
	VADDPS vc<>+768(SB), Y2, Y2; \
	VMULPS Y1, Y2, Y2; \
	VADDPS vc<>+736(SB), Y2, Y2; \
	VMULPS Y1, Y2, Y2; \
	VADDPS vc<>+704(SB), Y2, Y2; \
	VMULPS Y1, Y2, Y2; \
	VADDPS vc<>+672(SB), Y2, Y2; \
	VMULPS Y1, Y2, Y2; \
	VADDPS vc<>+640(SB), Y2, Y2; \
	VMULPS Y2, Y1, Y1; \
	VMULPS Y1, Y4, Y1; \
	VMOVUPS vc<>+352(SB), Y3; \
	VSUBPS Y1, Y3, Y3; \
	VBLENDVPS Y8, Y1, Y3, Y3

// func geluAVX2(dst, x *float32, n int)
TEXT ·geluAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
geluAVX2_loop:
	VMOVUPS (SI), Y8
	NORMF
	VMULPS Y3, Y8, Y3
	VMOVUPS Y3, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ geluAVX2_loop
	VZEROUPPER
	RET

// func geluGradAVX2(dst, x, gr *float32, n int)
TEXT ·geluGradAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ gr+16(FP), DX
	MOVQ n+24(FP), CX
geluGradAVX2_loop:
	VMOVUPS (SI), Y8
	NORMF
	VMULPS vc<>+608(SB), Y4, Y4
	VMULPS Y4, Y8, Y4
	VADDPS Y4, Y3, Y3
	VMULPS (DX), Y3, Y3
	VMOVUPS Y3, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ geluGradAVX2_loop
	VZEROUPPER
	RET

// func axpyRowsAVX2(dst, x, a *float32, m, n, lda int, zero bool)
// n ≥ 8, a multiple of 8; m ≥ 1; lda in floats. Columns in blocks of 32
// (four accumulators), then one block of the 24, 16 or 8 left, each
// column summing the rows in order, from dst's values or (zero) from +0.
TEXT ·axpyRowsAVX2(SB), NOSPLIT, $0-49
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ a+16(FP), DX
	MOVQ m+24(FP), R8
	MOVQ n+32(FP), CX
	MOVQ lda+40(FP), R9
	MOVBLZX zero+48(FP), R13
	SHLQ $2, R9
axpyRows32:
	CMPQ CX, $32
	JLT axpyRows24
	TESTQ R13, R13
	JNZ axpyRows32_init_z
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	JMP axpyRows32_init_go
axpyRows32_init_z:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
axpyRows32_init_go:
	MOVQ SI, R10
	MOVQ DX, R11
	MOVQ R8, R12
axpyRows32_loop:
	VBROADCASTSS (R10), Y4
	VMULPS (R11), Y4, Y5
	VADDPS Y5, Y0, Y0
	VMULPS 32(R11), Y4, Y6
	VADDPS Y6, Y1, Y1
	VMULPS 64(R11), Y4, Y7
	VADDPS Y7, Y2, Y2
	VMULPS 96(R11), Y4, Y8
	VADDPS Y8, Y3, Y3
	ADDQ $4, R10
	ADDQ R9, R11
	DECQ R12
	JNZ axpyRows32_loop
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $128, DX
	SUBQ $32, CX
	JMP axpyRows32
axpyRows24:
	CMPQ CX, $24
	JLT axpyRows16
	TESTQ R13, R13
	JNZ axpyRows24_init_z
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	JMP axpyRows24_init_go
axpyRows24_init_z:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
axpyRows24_init_go:
axpyRows24_loop:
	VBROADCASTSS (SI), Y4
	VMULPS (DX), Y4, Y5
	VADDPS Y5, Y0, Y0
	VMULPS 32(DX), Y4, Y6
	VADDPS Y6, Y1, Y1
	VMULPS 64(DX), Y4, Y7
	VADDPS Y7, Y2, Y2
	ADDQ $4, SI
	ADDQ R9, DX
	DECQ R8
	JNZ axpyRows24_loop
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	JMP axpyRows_done
axpyRows16:
	CMPQ CX, $16
	JLT axpyRows8
	TESTQ R13, R13
	JNZ axpyRows16_init_z
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	JMP axpyRows16_init_go
axpyRows16_init_z:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
axpyRows16_init_go:
axpyRows16_loop:
	VBROADCASTSS (SI), Y4
	VMULPS (DX), Y4, Y5
	VADDPS Y5, Y0, Y0
	VMULPS 32(DX), Y4, Y6
	VADDPS Y6, Y1, Y1
	ADDQ $4, SI
	ADDQ R9, DX
	DECQ R8
	JNZ axpyRows16_loop
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	JMP axpyRows_done
axpyRows8:
	CMPQ CX, $8
	JLT axpyRows_done
	TESTQ R13, R13
	JNZ axpyRows8_init_z
	VMOVUPS (DI), Y0
	JMP axpyRows8_init_go
axpyRows8_init_z:
	VXORPS Y0, Y0, Y0
axpyRows8_init_go:
axpyRows8_loop:
	VBROADCASTSS (SI), Y4
	VMULPS (DX), Y4, Y5
	VADDPS Y5, Y0, Y0
	ADDQ $4, SI
	ADDQ R9, DX
	DECQ R8
	JNZ axpyRows8_loop
	VMOVUPS Y0, (DI)
axpyRows_done:
	VZEROUPPER
	RET

// GELUCONSTS512 broadcasts the constants of NORMF512 into Z6, Z7 and
// Z10–Z31.
#define GELUCONSTS512 \
	VBROADCASTSS vc<>+0(SB), Z16; \
	VBROADCASTSS vc<>+32(SB), Z17; \
	VBROADCASTSS vc<>+64(SB), Z18; \
	VBROADCASTSS vc<>+96(SB), Z19; \
	VBROADCASTSS vc<>+128(SB), Z20; \
	VBROADCASTSS vc<>+160(SB), Z21; \
	VBROADCASTSS vc<>+192(SB), Z22; \
	VBROADCASTSS vc<>+224(SB), Z23; \
	VBROADCASTSS vc<>+256(SB), Z24; \
	VBROADCASTSS vc<>+288(SB), Z25; \
	VBROADCASTSS vc<>+352(SB), Z26; \
	VBROADCASTSS vc<>+384(SB), Z27; \
	VBROADCASTSS vc<>+416(SB), Z28; \
	VBROADCASTSS vc<>+544(SB), Z29; \
	VBROADCASTSS vc<>+576(SB), Z30; \
	VBROADCASTSS vc<>+896(SB), Z31; \
	VBROADCASTSS vc<>+864(SB), Z6; \
	VBROADCASTSS vc<>+832(SB), Z7; \
	VBROADCASTSS vc<>+800(SB), Z10; \
	VBROADCASTSS vc<>+768(SB), Z11; \
	VBROADCASTSS vc<>+736(SB), Z12; \
	VBROADCASTSS vc<>+704(SB), Z13; \
	VBROADCASTSS vc<>+672(SB), Z14; \
	VBROADCASTSS vc<>+640(SB), Z15

// NORMF512 is NORMF on 16 lanes: Z3 = Φ(x), Z4 = e^(−x²/2) for x in Z8
// (clobbers Z0–Z5, Z9, K1, K2). The exponential's argument −x²/2 is never
// above Expf's upper limit, and a NaN stays NaN through the polynomial, so
// only the lower limit is checked.
#define NORMF512 \
	VPANDND Z8, Z17, Z9; \
	VMULPS Z9, Z9, Z0; \
	VMULPS Z29, Z0, Z0; \
	VMULPS Z16, Z0, Z1; \
	VPANDD Z17, Z1, Z2; \
	VPORD Z18, Z2, Z2; \
	VADDPS Z2, Z1, Z1; \
	VCVTTPS2DQ Z1, Z1; \
	VCVTDQ2PS Z1, Z2; \
	VMULPS Z19, Z2, Z3; \
	VSUBPS Z3, Z0, Z3; \
	VMULPS Z20, Z2, Z4; \
	VSUBPS Z4, Z3, Z3; \
	VMULPS Z3, Z21, Z4; \
	VADDPS Z22, Z4, Z4; \
	VMULPS Z3, Z4, Z4; \
	VADDPS Z23, Z4, Z4; \
	VMULPS Z3, Z4, Z4; \
	VADDPS Z24, Z4, Z4; \
	VMULPS Z3, Z4, Z4; \
	VADDPS Z25, Z4, Z4; \
	VMULPS Z3, Z4, Z4; \
	VADDPS Z18, Z4, Z4; \
	VMULPS Z3, Z4, Z4; \
	VMULPS Z3, Z4, Z4; \
	VADDPS Z3, Z4, Z4; \
	VADDPS Z26, Z4, Z4; \
	VPADDD Z27, Z1, Z1; \
	VPSLLD $23, Z1, Z1; \
	VMULPS Z1, Z4, Z4; \
	VCMPPS $0x11, Z28, Z0, K1; \
	VPXORD Z4, Z4, K1, Z4; \
	VMULPS Z30, Z9, Z1; \
	VADDPS Z26, Z1, Z1; \
	VDIVPS Z1, Z26, Z1; \
	VMULPS Z1, Z31, Z2; \
	VADDPS Z6, Z2, Z2; \
	VMULPS Z1, Z2, Z2; \
	VADDPS Z7, Z2, Z2; \
	VMULPS Z1, Z2, Z2; \
	VADDPS Z10, Z2, Z2; \
	VMULPS Z1, Z2, Z2; \
	VADDPS Z11, Z2, Z2; \
	VMULPS Z1, Z2, Z2; \
	VADDPS Z12, Z2, Z2; \
	VMULPS Z1, Z2, Z2; \
	VADDPS Z13, Z2, Z2; \
	VMULPS Z1, Z2, Z2; \
	VADDPS Z14, Z2, Z2; \
	VMULPS Z1, Z2, Z2; \
	VADDPS Z15, Z2, Z2; \
	VMULPS Z2, Z1, Z1; \
	VMULPS Z1, Z4, Z1; \
	VSUBPS Z1, Z26, Z3; \
	VPTESTMD Z17, Z8, K2; \
	VMOVAPS Z1, K2, Z3

// func geluAVX512(dst, x *float32, n int)
TEXT ·geluAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	GELUCONSTS512
geluAVX512_loop:
	VMOVUPS (SI), Z8
	NORMF512
	VMULPS Z3, Z8, Z3
	VMOVUPS Z3, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ geluAVX512_loop
	VZEROUPPER
	RET

// func geluGradAVX512(dst, x, gr *float32, n int)
TEXT ·geluGradAVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ gr+16(FP), DX
	MOVQ n+24(FP), CX
	GELUCONSTS512
geluGradAVX512_loop:
	VMOVUPS (SI), Z8
	NORMF512
	VBROADCASTSS vc<>+608(SB), Z5
	VMULPS Z5, Z4, Z4
	VMULPS Z4, Z8, Z4
	VADDPS Z4, Z3, Z3
	VMULPS (DX), Z3, Z3
	VMOVUPS Z3, (DI)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ geluGradAVX512_loop
	VZEROUPPER
	RET
