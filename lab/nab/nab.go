// Package nab scores anomaly detectors as the Numenta Anomaly Benchmark
// does: Lavin and Ahmad, "Evaluating Real-time Anomaly Detection
// Algorithms — the Numenta Anomaly Benchmark" (IEEE ICMLA 2015), section
// IV (the scoring function, eq. 1, and its normalisation), and NAB's
// scoring code (github.com/numenta/NAB, nab/sweeper.py, read to learn the
// exact sigmoid, the probationary period and the threshold sweep; nothing
// here is copied from it).
//
// Each labelled window of a file rewards its earliest detection inside it
// by A_TP·σ(y)/σ(−1 position), where y is the detection's position relative
// to the window's right end (−1 at its start, 0 at its end) and
// σ(y) = 2/(1 + e^{5y}) − 1; a window without detection costs A_FN. A
// detection outside every window costs A_FP·|σ(y)|, y its distance past the
// preceding window's right end in units of that window's width less one
// (−A_FP when no window precedes it, or more than 3 widths past it). The
// first 15 % of a file (at most 750 points) is probationary and not
// scored. The raw score over a corpus is normalised so that the null
// detector (never fires) scores 0 and the perfect one (fires at the start
// of every window) 100. The detection threshold is one for the whole
// corpus, the one that maximises the raw score (NAB's optimizer).
package nab

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"time"
)

// Profile weights true positives, false positives and false negatives.
type Profile struct {
	Name       string
	TP, FP, FN float64
}

// NAB's three application profiles (its config/profiles.json; weights
// given as magnitudes): the standard one, A_TP = 1, A_FP = −0.11,
// A_FN = −1; one where false positives cost twice as much; one where a
// missed window costs twice as much. NAB chooses a detector's threshold
// for each profile separately.
var (
	Standard    = Profile{Name: "standard", TP: 1, FP: 0.11, FN: 1}
	LowFP       = Profile{Name: "reward_low_FP_rate", TP: 1, FP: 0.22, FN: 1}
	LowFN       = Profile{Name: "reward_low_FN_rate", TP: 1, FP: 0.11, FN: 2}
	AllProfiles = []Profile{Standard, LowFP, LowFN}
)

// ProfileNamed returns the profile of AllProfiles with the given name.
func ProfileNamed(name string) (Profile, error) {
	for _, p := range AllProfiles {
		if p.Name == name {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("nab: no profile %q: want standard, reward_low_FP_rate or reward_low_FN_rate", name)
}

// ProbationPercent is the share of a file, at most ProbationMax points,
// that is not scored.
const (
	ProbationPercent = 0.15
	ProbationMax     = 750 // 0.15 × 5000
)

// Window is a labelled anomaly window, both ends included.
type Window struct{ Start, End time.Time }

// TimeLayout is the layout of the times in NAB's files and labels.
const TimeLayout = "2006-01-02 15:04:05"

// LoadWindows reads NAB's combined_windows.json (here anomaly_windows.json):
// an object from a file's path to its list of [start, end] time pairs.
func LoadWindows(path string) (map[string][]Window, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw map[string][][2]string
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make(map[string][]Window, len(raw))
	for file, ws := range raw {
		out[file] = []Window{}
		for i, w := range ws {
			var win Window
			for k, s := range w {
				tm, err := time.Parse(TimeLayout+".999999", s)
				if err != nil {
					return nil, fmt.Errorf("%s: %s window %d: %w", path, file, i, err)
				}
				if k == 0 {
					win.Start = tm
				} else {
					win.End = tm
				}
			}
			if win.End.Before(win.Start) {
				return nil, fmt.Errorf("%s: %s window %d ends %v before it starts %v", path, file, i, win.End, win.Start)
			}
			out[file] = append(out[file], win)
		}
	}
	return out, nil
}

// File is one data file's detector output.
type File struct {
	Name    string
	Times   []time.Time
	Scores  []float64 // the detector's score per point; a detection is a score ≥ the threshold
	Windows []Window  // in time order, not overlapping
}

// scaledSigmoid is NAB's σ(y) = 2/(1 + e^{5y}) − 1, and −1 from y = 3 on.
func scaledSigmoid(y float64) float64 {
	if y >= 3 {
		return -1
	}
	return 2/(1+math.Exp(5*y)) - 1
}

// point is a scored point: its detector score, its weighted NAB score
// if it were a detection, and its window (−1 outside every window).
type point struct {
	score, sweep float64
	window       int
}

// sweep returns f's scorable points (after probation) with their NAB
// scores under p, windows numbered from base, and the windows with a
// scorable point. A window spans the points from the first, in file
// order, at its start to the first after that at its end, as NAB finds
// them (a file whose clock steps back may repeat a time); a window whose
// ends are not times of the file spans from the first point at or after
// its start to the last before the first point past its end.
func (f File) sweep(p Profile, base int) ([]point, []int, error) {
	if len(f.Times) != len(f.Scores) {
		return nil, nil, fmt.Errorf("nab: %s: %d times but %d scores", f.Name, len(f.Times), len(f.Scores))
	}
	n := len(f.Times)
	prob := int(math.Min(math.Floor(ProbationPercent*float64(n)), ProbationMax))
	// Each point's window, by index ranges.
	type span struct{ lo, hi int }
	spans := make([]span, 0, len(f.Windows))
	for _, w := range f.Windows {
		lo, hi := windowSpan(f.Times, w)
		if lo > hi {
			return nil, nil, fmt.Errorf("nab: %s: window %v–%v holds no point", f.Name, w.Start, w.End)
		}
		if len(spans) > 0 && lo <= spans[len(spans)-1].hi {
			return nil, nil, fmt.Errorf("nab: %s: window %v–%v overlaps the one before", f.Name, w.Start, w.End)
		}
		spans = append(spans, span{lo, hi})
	}
	maxTP := scaledSigmoid(-1)
	var pts []point
	var windows []int
	k := 0 // next window
	prev := -1
	for i := 0; i < n; i++ {
		for k < len(spans) && spans[k].hi < i {
			prev = k
			k++
		}
		pt := point{score: f.Scores[i], window: -1}
		if k < len(spans) && spans[k].lo <= i {
			width := float64(spans[k].hi - spans[k].lo + 1)
			pos := -float64(spans[k].hi-i+1) / width
			pt.sweep = scaledSigmoid(pos) * p.TP / maxTP
			pt.window = base + k
		} else if prev < 0 {
			pt.sweep = -p.FP
		} else {
			width := float64(spans[prev].hi - spans[prev].lo + 1)
			pos := float64(i-spans[prev].hi) / (width - 1)
			if width == 1 {
				pos = math.Inf(1)
			}
			pt.sweep = scaledSigmoid(pos) * p.FP
		}
		if i < prob {
			continue
		}
		if pt.window >= 0 && (len(windows) == 0 || windows[len(windows)-1] != pt.window) {
			windows = append(windows, pt.window)
		}
		pts = append(pts, pt)
	}
	return pts, windows, nil
}

// windowSpan returns the indices of the first and last points of w in
// times (lo > hi when it holds none). O(n).
func windowSpan(times []time.Time, w Window) (lo, hi int) {
	n := len(times)
	lo = slices.IndexFunc(times, w.Start.Equal)
	if lo < 0 {
		lo = slices.IndexFunc(times, func(t time.Time) bool { return !t.Before(w.Start) })
	}
	if lo < 0 {
		return n, n - 1
	}
	hi = lo - 1
	for i := lo; i < n; i++ {
		if times[i].Equal(w.End) {
			return lo, i
		}
		if times[i].After(w.End) {
			break
		}
		hi = i
	}
	return lo, hi
}

// Result is a corpus's score at one threshold.
type Result struct {
	Threshold float64
	// Raw is the sum of the weighted scores; Null and Perfect those of
	// the detector that never fires and the one that fires at the start
	// of every window; Score is 100·(Raw − Null)/(Perfect − Null).
	Raw, Null, Perfect, Score float64
	// TP counts windows detected, FN those missed, FP detections outside
	// every window.
	TP, FN, FP int
}

// At scores files under profile p, counting as a detection every point
// whose score is ≥ threshold.
func At(files []File, p Profile, threshold float64) (Result, error) {
	rs, err := sweepAll(files, p, []float64{threshold})
	if err != nil {
		return Result{}, err
	}
	return rs[0], nil
}

// Best scores files under p at every threshold that changes the
// detections (every distinct score) and returns the best result, NAB's
// choice of a detector's threshold over a corpus. O(P log P) for P points.
func Best(files []File, p Profile) (Result, error) {
	rs, err := sweepAll(files, p, nil)
	if err != nil {
		return Result{}, err
	}
	best := rs[0]
	for _, r := range rs[1:] {
		if r.Raw > best.Raw {
			best = r
		}
	}
	return best, nil
}

// sweepAll returns the results at the given thresholds (in any order), or
// at every distinct score and above the highest when thresholds is nil.
func sweepAll(files []File, p Profile, thresholds []float64) ([]Result, error) {
	var pts []point
	nw := 0
	base := 0
	for _, f := range files {
		fp, ws, err := f.sweep(p, base)
		if err != nil {
			return nil, err
		}
		base += len(f.Windows)
		nw += len(ws)
		pts = append(pts, fp...)
	}
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].score > pts[j].score })
	null := -p.FN * float64(nw)
	perfect := p.TP * float64(nw)
	best := make(map[int]float64) // best sweep score of each detected window
	fpSum := 0.0
	nfp := 0
	result := func(th float64) Result {
		raw := fpSum + null
		for _, s := range best {
			raw += s + p.FN
		}
		r := Result{Threshold: th, Raw: raw, Null: null, Perfect: perfect, TP: len(best), FN: nw - len(best), FP: nfp}
		if perfect != null {
			r.Score = 100 * (raw - null) / (perfect - null)
		}
		return r
	}
	add := func(pt point) {
		if pt.window < 0 {
			fpSum += pt.sweep
			nfp++
			return
		}
		if s, ok := best[pt.window]; !ok || pt.sweep > s {
			best[pt.window] = pt.sweep
		}
	}
	if thresholds != nil {
		ths := append([]float64(nil), thresholds...)
		sort.Sort(sort.Reverse(sort.Float64Slice(ths)))
		var out []Result
		i := 0
		for _, th := range ths {
			for ; i < len(pts) && pts[i].score >= th; i++ {
				add(pts[i])
			}
			out = append(out, result(th))
		}
		return out, nil
	}
	out := []Result{result(math.Inf(1))}
	for i := 0; i < len(pts); {
		th := pts[i].score
		for ; i < len(pts) && pts[i].score == th; i++ {
			add(pts[i])
		}
		out = append(out, result(th))
	}
	return out, nil
}
