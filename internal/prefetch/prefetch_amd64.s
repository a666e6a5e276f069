#include "textflag.h"

// func Bytes(p unsafe.Pointer, n uintptr)
TEXT ·Bytes(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
	TESTQ CX, CX
	JZ done
	ADDQ AX, CX    // the end
	ANDQ $~63, AX  // the line of the first byte
loop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, CX
	JB loop
done:
	RET
