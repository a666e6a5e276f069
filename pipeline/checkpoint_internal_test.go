package pipeline

import (
	"slices"
	"testing"
	"time"

	"github.com/forecastd/forecastd/window"
)

type winSample struct {
	x  []float64
	y  float64
	id uint64
}

func windowSamples(w *window.Window) []winSample {
	var out []winSample
	w.Samples(func(x []float64, y float64, id uint64) bool {
		out = append(out, winSample{slices.Clone(x), y, id})
		return true
	})
	return out
}

// TestRestoreAOSVRWindowAgreesWithModel: a restored AOSVR series' window
// holds the model's samples under the model's handles, in the order of the
// uninterrupted series' window, without the model having learned anything
// on restore (same handles, same next handle); and the two windows stay
// equal, forgetting the same samples, as both series go on.
func TestRestoreAOSVRWindowAgreesWithModel(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Window = 50
	v := santafe(600)
	a, b := mustNew(t, cfg), mustNew(t, cfg)
	push := func(s *Series, i int) {
		if _, err := s.Push(Point{Time: time.Unix(int64(i), 0), Value: v[i]}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 300 { // the window has wrapped around several times
		push(a, i)
		push(b, i)
	}
	st, err := b.Export()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Restore("test", cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	aa, ra := a.model.reg.(*aosvrModel), r.model.reg.(*aosvrModel)
	ma, mr := aa.AOSVR, ra.AOSVR
	if got, want := windowSamples(ra.win), windowSamples(aa.win); !slices.EqualFunc(got, want, func(p, q winSample) bool {
		return p.id == q.id && p.y == q.y && slices.Equal(p.x, q.x)
	}) {
		t.Fatalf("restored window differs:\n got %v\nwant %v", got, want)
	}
	if ra.win.Len() != mr.Len() || mr.Len() != 50 {
		t.Fatalf("window holds %d samples, model %d, want 50", ra.win.Len(), mr.Len())
	}
	if ea, er := ma.Export(), mr.Export(); er.Next != ea.Next || !slices.Equal(er.IDs, ea.IDs) {
		t.Fatalf("restore re-learned: next handle %d, want %d", er.Next, ea.Next)
	}
	for i := 300; i < 600; i++ {
		push(a, i)
		push(r, i)
		wa, wr := windowSamples(aa.win), windowSamples(ra.win)
		if len(wa) != len(wr) || wa[0].id != wr[0].id || wa[len(wa)-1].id != wr[len(wr)-1].id {
			t.Fatalf("point %d: windows diverge", i)
		}
		if mr.Len() != ra.win.Len() {
			t.Fatalf("point %d: model holds %d samples, window %d", i, mr.Len(), ra.win.Len())
		}
	}
}
