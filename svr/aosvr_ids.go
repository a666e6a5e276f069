package svr

import "math"

// id returns the handle of sample i.
func (m *AOSVR) id(i int) uint64 {
	if m.idWide {
		return uint64(m.ids[2*i]) | uint64(m.ids[2*i+1])<<32
	}
	return m.idBase + uint64(m.ids[i])
}

// moveID gives slot dst the handle of slot src.
func (m *AOSVR) moveID(dst, src int) {
	if m.idWide {
		m.ids[2*dst], m.ids[2*dst+1] = m.ids[2*src], m.ids[2*src+1]
		return
	}
	m.ids[dst] = m.ids[src]
}

// setID gives slot i the handle id; the slots below live other than i hold
// the handles of the samples held. While narrow, a handle out of the 2³²
// offsets from idBase moves idBase to the lowest handle held, or, if the
// handles held span more than that, makes ids wide: O(live) then, O(1)
// otherwise.
func (m *AOSVR) setID(i int, id uint64, live int) {
	if !m.idWide {
		if id >= m.idBase && id-m.idBase <= math.MaxUint32 {
			m.ids[i] = uint32(id - m.idBase)
			return
		}
		lo, hi := id, id
		for j := range live {
			if j != i {
				v := m.id(j)
				lo, hi = min(lo, v), max(hi, v)
			}
		}
		if hi-lo <= math.MaxUint32 {
			for j := range live {
				if j != i {
					m.ids[j] = uint32(m.id(j) - lo)
				}
			}
			m.idBase = lo
			m.ids[i] = uint32(id - lo)
			return
		}
		wide := make([]uint32, 2*len(m.ids))
		for j := range live {
			if j != i {
				v := m.id(j)
				wide[2*j], wide[2*j+1] = uint32(v), uint32(v>>32)
			}
		}
		m.ids, m.idWide, m.idBase = wide, true, 0
	}
	m.ids[2*i], m.ids[2*i+1] = uint32(id), uint32(id>>32)
}
