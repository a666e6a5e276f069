package prefetch

import (
	"bytes"
	"testing"
	"unsafe"
)

// A prefetch reads nothing into Go's view and writes nothing: every
// range, aligned or not, empty, or ending at the last byte of its
// allocation, leaves the memory as it was (and faults on none).
func TestPrefetchChangesNothing(t *testing.T) {
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	want := bytes.Clone(buf)
	for off := range 130 {
		for _, n := range []int{0, 1, 63, 64, 65, 127, 128, 129, 1000, len(buf) - off} {
			if off+n > len(buf) {
				continue
			}
			Bytes(unsafe.Pointer(&buf[off]), uintptr(n))
			Head(buf[off : off+n])
		}
	}
	Head[float64](nil)
	Head([]float64{})
	Object[[4]int](nil)
	x := [3]float64{1, 2, 3}
	Object(&x)
	if !bytes.Equal(buf, want) || x != [3]float64{1, 2, 3} {
		t.Fatal("a prefetch changed memory")
	}
}

func BenchmarkHead(b *testing.B) {
	s := make([]float64, 100)
	for b.Loop() {
		Head(s)
	}
}
