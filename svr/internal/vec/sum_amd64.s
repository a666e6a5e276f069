#include "textflag.h"

// func sum4s(dst, base *float64, n int, b float64, a []float64, cols [][]float64)
// Four rows at a time: acc = base + b; for each k, acc = acc + a[k]·col_k
// (a multiply, then an add: no fused multiply-add).
TEXT ·sum4s(SB), NOSPLIT, $0-80
	MOVQ dst+0(FP), DI
	MOVQ base+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD b+24(FP), Y7
	MOVQ a_base+32(FP), R8
	MOVQ a_len+40(FP), R9
	MOVQ cols_base+56(FP), R10
	XORQ AX, AX // byte offset of the row block
rows:
	VMOVUPD (SI)(AX*1), Y0
	VADDPD Y7, Y0, Y0
	XORQ BX, BX // k
	MOVQ R10, R11 // &cols[k]
cols:
	CMPQ BX, R9
	JGE store
	MOVQ (R11), DX // cols[k]'s data
	VBROADCASTSD (R8)(BX*8), Y1
	VMULPD (DX)(AX*1), Y1, Y2
	VADDPD Y2, Y0, Y0
	INCQ BX
	ADDQ $24, R11
	JMP cols
store:
	VMOVUPD Y0, (DI)(AX*1)
	ADDQ $32, AX
	SUBQ $4, CX
	JNZ rows
	VZEROUPPER
	RET
