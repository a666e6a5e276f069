package prefetch

import "unsafe"

// Bytes prefetches the n bytes from p: every cache line they touch.
//
//go:noescape
func Bytes(p unsafe.Pointer, n uintptr)
