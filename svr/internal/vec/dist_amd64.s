#include "textflag.h"

// func sqdists8(dst *float64, n int, x *float64, at *int32, z *float64, d int, tt *float64, ntt int, scale float64)
// Eight rows at a time, n (a multiple of 8, > 0) in all: row j is
// x[at[j]·d:][:d], and, from s = 0, s = s + (x_k − z_k)² for
// k < d (a subtraction, a multiplication, an addition: no fused
// multiply-add); s = s + tt_k for k < ntt; dst[j] = scale·s. Lanes gather one input of
// each of four rows; the slots of dst and at hold their advancing values.
TEXT ·sqdists8(SB), NOSPLIT, $0-72
	MOVQ z+32(FP), R12
	MOVQ d+40(FP), R13
	SHLQ $3, R13 // the bytes of a row
	VBROADCASTSD scale+64(FP), Y15

block:
	MOVQ at+24(FP), CX
	MOVLQSX 0(CX), AX
	MOVLQSX 4(CX), BX
	MOVLQSX 8(CX), DX
	MOVLQSX 12(CX), SI
	MOVLQSX 16(CX), R8
	MOVLQSX 20(CX), R9
	MOVLQSX 24(CX), R10
	MOVLQSX 28(CX), R11
	ADDQ $32, CX
	MOVQ CX, at+24(FP)
	IMULQ R13, AX
	IMULQ R13, BX
	IMULQ R13, DX
	IMULQ R13, SI
	IMULQ R13, R8
	IMULQ R13, R9
	IMULQ R13, R10
	IMULQ R13, R11
	MOVQ x+16(FP), CX
	ADDQ CX, AX
	ADDQ CX, BX
	ADDQ CX, DX
	ADDQ CX, SI
	ADDQ CX, R8
	ADDQ CX, R9
	ADDQ CX, R10
	ADDQ CX, R11
	VXORPD Y6, Y6, Y6 // rows 0–3
	VXORPD Y7, Y7, Y7 // rows 4–7
	XORQ CX, CX       // byte offset of input k
	TESTQ R13, R13
	JZ suffix

dims:
	VMOVSD (AX)(CX*1), X1
	VMOVHPD (BX)(CX*1), X1, X1
	VMOVSD (DX)(CX*1), X2
	VMOVHPD (SI)(CX*1), X2, X2
	VINSERTF128 $1, X2, Y1, Y1
	VMOVSD (R8)(CX*1), X3
	VMOVHPD (R9)(CX*1), X3, X3
	VMOVSD (R10)(CX*1), X4
	VMOVHPD (R11)(CX*1), X4, X4
	VINSERTF128 $1, X4, Y3, Y3
	VBROADCASTSD (R12)(CX*1), Y5
	VSUBPD Y5, Y1, Y1
	VSUBPD Y5, Y3, Y3
	VMULPD Y1, Y1, Y1
	VMULPD Y3, Y3, Y3
	VADDPD Y1, Y6, Y6
	VADDPD Y3, Y7, Y7
	ADDQ $8, CX
	CMPQ CX, R13
	JLT dims

suffix:
	MOVQ tt+48(FP), AX
	MOVQ ntt+56(FP), BX
	XORQ CX, CX

terms:
	CMPQ CX, BX
	JGE store
	VBROADCASTSD (AX)(CX*8), Y5
	VADDPD Y5, Y6, Y6
	VADDPD Y5, Y7, Y7
	INCQ CX
	JMP terms

store:
	VMULPD Y15, Y6, Y6
	VMULPD Y15, Y7, Y7
	MOVQ dst+0(FP), DI
	VMOVUPD Y6, (DI)
	VMOVUPD Y7, 32(DI)
	ADDQ $64, DI
	MOVQ DI, dst+0(FP)
	MOVQ n+8(FP), CX
	SUBQ $8, CX
	MOVQ CX, n+8(FP)
	JNZ block
	VZEROUPPER
	RET
