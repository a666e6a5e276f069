//go:build !amd64

package prefetch

import "unsafe"

// Bytes prefetches the n bytes from p; on this architecture, nothing.
func Bytes(p unsafe.Pointer, n uintptr) {}
