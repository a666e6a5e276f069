package nab

import (
	"math"
	"testing"
	"time"
)

// TestProfiles: NAB's three profiles on one file with a detection at the
// window's start and a false positive before it. Raw scores: standard
// 1 − 0.11, low FP 1 − 0.22, low FN 1 − 0.11; the null detector scores −1,
// −1 and −2, the perfect one 1 (A_TP); so 100·(raw − null)/(1 − null).
func TestProfiles(t *testing.T) {
	f := file(300, 500)
	for _, c := range []struct {
		p         Profile
		raw, null float64
	}{{Standard, 1 - 0.11, -1}, {LowFP, 1 - 0.22, -1}, {LowFN, 1 - 0.11, -2}} {
		r, err := At([]File{f}, c.p, 0.5)
		if err != nil {
			t.Fatal(err)
		}
		want := 100 * (c.raw - c.null) / (1 - c.null)
		if math.Abs(r.Raw-c.raw) > 1e-12 || r.Null != c.null || r.Perfect != 1 || math.Abs(r.Score-want) > 1e-9 {
			t.Errorf("%s: raw %v null %v perfect %v score %v, want raw %v null %v score %v", c.p.Name, r.Raw, r.Null, r.Perfect, r.Score, c.raw, c.null, want)
		}
		if p, err := ProfileNamed(c.p.Name); err != nil || p != c.p {
			t.Errorf("ProfileNamed(%q) = %+v, %v", c.p.Name, p, err)
		}
	}
	if _, err := ProfileNamed("lenient"); err == nil {
		t.Error("an unknown profile named")
	}
}

// TestWindowSpanClockBack: in a file whose clock steps back (NAB's
// files repeat a stretch of times), a window spans from the first point
// at its start to the first at its end after that, as NAB's scorer finds
// them by value; a window whose ends are not times of the file spans the
// points between them.
func TestWindowSpanClockBack(t *testing.T) {
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	var times []time.Time
	for _, i := range []int{0, 1, 2, 3, 4, 5, 6, 2, 3, 4, 5, 6, 7, 8, 9} { // 2…6 twice
		times = append(times, at(i))
	}
	for _, c := range []struct {
		w      Window
		lo, hi int
	}{
		{Window{at(3), at(5)}, 3, 5},   // the first 3, the first 5 after it
		{Window{at(6), at(8)}, 6, 13},  // 6 at index 6, 8 at index 13
		{Window{at(7), at(9)}, 12, 14}, // after the repeat
		{Window{at(3).Add(30 * time.Second), at(4).Add(30 * time.Second)}, 4, 4},
	} {
		if lo, hi := windowSpan(times, c.w); lo != c.lo || hi != c.hi {
			t.Errorf("window %v–%v: points %d–%d, want %d–%d", c.w.Start.Format("15:04:05"), c.w.End.Format("15:04:05"), lo, hi, c.lo, c.hi)
		}
	}
	if lo, hi := windowSpan(times, Window{at(20), at(21)}); lo <= hi {
		t.Errorf("a window after the file holds points %d–%d", lo, hi)
	}
}

// TestLeaveOneGroupOut: three categories (directories) of one file each
// and three candidates. Candidate 0 detects the windows of a and b,
// candidate 1 those of b and c, candidate 2 only c's. Held out a, the
// choice on b and c is candidate 1 (both), which misses a: 0. Held out b:
// on a and c candidates 0 and 1 tie (one each) and the first, 0, is
// chosen, which detects b: 100. Held out c: candidate 0 (a and b), which
// misses c: 0. Fitted on all three: candidate 0 or 1 (two each), the
// first: 0, with 100, 100, 0 by category.
func TestLeaveOneGroupOut(t *testing.T) {
	mk := func(name string, detect bool) File {
		f := file()
		f.Name = name
		if detect {
			f.Scores[510] = 1
		}
		return f
	}
	cands := [][]File{
		{mk("a/x.csv", true), mk("b/x.csv", true), mk("c/x.csv", false)},
		{mk("a/x.csv", false), mk("b/x.csv", true), mk("c/x.csv", true)},
		{mk("a/x.csv", false), mk("b/x.csv", false), mk("c/x.csv", true)},
	}
	h, err := LeaveOneGroupOut(cands, Standard, AllProfiles, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	s := scaledSigmoid(-0.9) / scaledSigmoid(-1) // a detection at point 510 of the window 500–599
	wantChosen := []int{1, 0, 0}
	wantHeld := []float64{0, 100 * (s + 1) / 2, 0}
	for i, f := range h.Folds {
		if f.Group != []string{"a", "b", "c"}[i] || f.Chosen != wantChosen[i] || math.Abs(f.HeldOut[0].Score-wantHeld[i]) > 1e-9 {
			t.Errorf("fold %d: held out %s, chose %d, scored %v; want %d and %v", i, f.Group, f.Chosen, f.HeldOut[0].Score, wantChosen[i], wantHeld[i])
		}
		if f.HeldOut[0].TP+f.HeldOut[0].FN != 1 {
			t.Errorf("fold %d scored on %d windows, want its own 1", i, f.HeldOut[0].TP+f.HeldOut[0].FN)
		}
	}
	if want := (wantHeld[0] + wantHeld[1] + wantHeld[2]) / 3; math.Abs(h.HeldOutMean[0]-want) > 1e-9 {
		t.Errorf("held-out mean %v, want %v", h.HeldOutMean[0], want)
	}
	if h.Fitted != 0 || len(h.FittedGroups) != 3 || h.FittedAll[0].TP != 2 {
		t.Errorf("fitted: candidate %d, %d categories, %d windows detected; want 0, 3, 2", h.Fitted, len(h.FittedGroups), h.FittedAll[0].TP)
	}
	if want := 2 * 100 * (s + 1) / 2 / 3; math.Abs(h.FittedMean[0]-want) > 1e-9 {
		t.Errorf("fitted mean of categories %v, want %v", h.FittedMean[0], want)
	}
	// Low FN counts a miss twice: the held-out b under it is 100·(s + 2)/3.
	if want := 100 * (s + 2) / 3; math.Abs(h.Folds[1].HeldOut[2].Score-want) > 1e-9 {
		t.Errorf("held-out b under %s: %v, want %v", AllProfiles[2].Name, h.Folds[1].HeldOut[2].Score, want)
	}

	// Refused: one category only, candidates of other files, a category
	// without a window.
	one := [][]File{{mk("a/x.csv", true), mk("a/y.csv", true)}}
	if _, err := LeaveOneGroupOut(one, Standard, AllProfiles, 0.5); err == nil {
		t.Error("one category accepted")
	}
	other := [][]File{cands[0], {mk("a/x.csv", true), mk("b/y.csv", true), mk("c/x.csv", true)}}
	if _, err := LeaveOneGroupOut(other, Standard, AllProfiles, 0.5); err == nil {
		t.Error("candidates of different files accepted")
	}
	empty := mk("d/x.csv", false)
	empty.Windows = nil
	if _, err := LeaveOneGroupOut([][]File{append(cands[0][:3:3], empty)}, Standard, AllProfiles, 0.5); err == nil {
		t.Error("a category without a window accepted")
	}
}

func TestGroup(t *testing.T) {
	for name, want := range map[string]string{
		"realKnownCause/nyc_taxi.csv":                 "realKnownCause",
		"artificialNoAnomaly/art_flatline.csv":        "artificial",
		"artificialWithAnomaly/art_daily_jumpsup.csv": "artificial",
		"top.csv":   "",
		"a/b/c.csv": "a",
	} {
		if got := Group(name); got != want {
			t.Errorf("Group(%q) = %q, want %q", name, got, want)
		}
	}
}
