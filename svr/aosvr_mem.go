package svr

import "unsafe"

// aosvrStructBytes is the size of the AOSVR struct itself.
const aosvrStructBytes = int(unsafe.Sizeof(AOSVR{}))

// MemPart is one part of a model's memory: a name and the bytes its buffers
// hold (their capacity, not their length).
type MemPart struct {
	Name  string
	Bytes int
}

// MemoryParts returns where the model's memory goes, part by part; the parts
// add up to StateBytes. It reads the capacities of the model's own buffers
// (TestAOSVRMemoryParts checks the sum against the heap the collector frees
// when a model is dropped). O(|S|).
func (m *AOSVR) MemoryParts() []MemPart {
	colBytes := func(cs [][]float64) int {
		b := 24 * cap(cs)
		for _, c := range cs {
			b += 8 * cap(c)
		}
		return b
	}
	undoBytes := 0
	if m.u != nil { // within a call
		undoBytes = 8 * cap(m.u.dropX)
	}
	return []MemPart{
		{"samples x (n·stored inputs, constant trailing inputs once)", 8 * (cap(m.x) + cap(m.xsuf))},
		{"per sample y, θ, h, handles, set, position", 8*(cap(m.y)+cap(m.theta)+cap(m.h)) + 4*cap(m.ids) + cap(m.set) + 4*cap(m.spos)},
		{"kernel columns of S (|S|·n)", colBytes(m.cols) + 4*cap(m.s)},
		{"spare kernel columns", colBytes(m.pool)},
		{"R ((|S|+1)², the capacity of its buffer)", 8 * cap(m.r)},
		{"scratch (kernel column, γ, β, vectors, refusals)", 8*(cap(m.kc)+cap(m.gam)+cap(m.beta)+cap(m.vec)) + 4*(cap(m.blocked)+cap(m.bounced)+cap(m.zeroIn)) + cap(m.zeroFrom)},
		{"undo (lent for a call)", undoBytes},
		{"struct", aosvrStructBytes},
	}
}
