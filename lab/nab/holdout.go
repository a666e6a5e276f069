package nab

import (
	"fmt"
	"slices"
	"strings"
)

// Group returns the category of a file for leave-one-category-out: the
// first directory of its name ("realKnownCause/nyc_taxi.csv" is in
// realKnownCause), with NAB's artificialNoAnomaly and
// artificialWithAnomaly as one, "artificial" (the first has no window to
// be scored on alone); "" for a file in no directory.
func Group(name string) string {
	dir, _, ok := strings.Cut(name, "/")
	if !ok {
		return ""
	}
	if strings.HasPrefix(dir, "artificial") {
		return "artificial"
	}
	return dir
}

// GroupResult is one category's score.
type GroupResult struct {
	Group string
	Files int
	// Results holds the score under each profile asked for, in order.
	Results []Result
}

// Groups scores each category of files (Group) alone under each profile
// at threshold, the categories in name order.
func Groups(files []File, profiles []Profile, threshold float64) ([]GroupResult, error) {
	var out []GroupResult
	for _, g := range groupNames(files) {
		sub := groupFiles(files, g, true)
		gr := GroupResult{Group: g, Files: len(sub)}
		for _, p := range profiles {
			r, err := At(sub, p, threshold)
			if err != nil {
				return nil, err
			}
			gr.Results = append(gr.Results, r)
		}
		out = append(out, gr)
	}
	return out, nil
}

func groupNames(files []File) []string {
	var gs []string
	for _, f := range files {
		if g := Group(f.Name); !slices.Contains(gs, g) {
			gs = append(gs, g)
		}
	}
	slices.Sort(gs)
	return gs
}

// groupFiles returns the files of group g (in) or of every other group.
func groupFiles(files []File, g string, in bool) []File {
	var out []File
	for _, f := range files {
		if (Group(f.Name) == g) == in {
			out = append(out, f)
		}
	}
	return out
}

// Fold is one category held out: the candidate chosen on the others and
// its scores there and on the category.
type Fold struct {
	Group string
	// Chosen is the index of the candidate with the best score on the
	// other categories under the selection profile (the first of equals).
	Chosen int
	// Rest is the chosen candidate's score on the other categories
	// under the selection profile; HeldOut its scores on the category
	// under each profile.
	Rest    Result
	HeldOut []Result
}

// Holdout is the result of leave-one-category-out.
type Holdout struct {
	Select   Profile
	Profiles []Profile
	Folds    []Fold
	// HeldOutMean is the mean over the folds of the held-out scores,
	// per profile.
	HeldOutMean []float64
	// Fitted is the index of the candidate with the best score on every
	// file under the selection profile (the first of equals); FittedAll
	// its scores on every file and FittedGroups on each category (in the
	// order of Folds), per profile, and FittedMean the mean over the
	// categories, per profile: the figure HeldOutMean is an estimate of
	// for categories not seen.
	Fitted       int
	FittedAll    []Result
	FittedGroups []GroupResult
	FittedMean   []float64
}

// LeaveOneGroupOut chooses among candidate detectors the way a
// benchmark with whole categories unseen judges them: for each category
// (Group) of the files, the candidate with the best score under sel on
// the files of every other category, which is then scored on the
// category left out under each of profiles. cands[k] holds candidate k's
// files, the same files in the same order for every candidate;
// detections are the points scored ≥ threshold. Every category must have
// a window to score. O(C·G) scorings for C candidates and G categories.
func LeaveOneGroupOut(cands [][]File, sel Profile, profiles []Profile, threshold float64) (Holdout, error) {
	h := Holdout{Select: sel, Profiles: profiles}
	if err := sameFiles(cands); err != nil {
		return h, err
	}
	groups := groupNames(cands[0])
	if len(groups) < 2 {
		return h, fmt.Errorf("nab: leave-one-category-out needs files in two categories (directories) at least, got %q", groups)
	}
	choose := func(in func(f File) bool) (int, Result, error) {
		best, bestR := -1, Result{}
		for k, c := range cands {
			var sub []File
			for _, f := range c {
				if in(f) {
					sub = append(sub, f)
				}
			}
			r, err := At(sub, sel, threshold)
			if err != nil {
				return 0, r, err
			}
			if best < 0 || r.Score > bestR.Score {
				best, bestR = k, r
			}
		}
		return best, bestR, nil
	}
	h.HeldOutMean = make([]float64, len(profiles))
	for _, g := range groups {
		k, rest, err := choose(func(f File) bool { return Group(f.Name) != g })
		if err != nil {
			return h, err
		}
		fold := Fold{Group: g, Chosen: k, Rest: rest}
		held := groupFiles(cands[k], g, true)
		for i, p := range profiles {
			r, err := At(held, p, threshold)
			if err != nil {
				return h, err
			}
			if r.TP+r.FN == 0 {
				return h, fmt.Errorf("nab: category %s has no window to score", g)
			}
			fold.HeldOut = append(fold.HeldOut, r)
			h.HeldOutMean[i] += r.Score / float64(len(groups))
		}
		h.Folds = append(h.Folds, fold)
	}
	k, _, err := choose(func(File) bool { return true })
	if err != nil {
		return h, err
	}
	h.Fitted = k
	for _, p := range profiles {
		r, err := At(cands[k], p, threshold)
		if err != nil {
			return h, err
		}
		h.FittedAll = append(h.FittedAll, r)
	}
	if h.FittedGroups, err = Groups(cands[k], profiles, threshold); err != nil {
		return h, err
	}
	h.FittedMean = make([]float64, len(profiles))
	for _, gr := range h.FittedGroups {
		for i, r := range gr.Results {
			h.FittedMean[i] += r.Score / float64(len(groups))
		}
	}
	return h, nil
}

// sameFiles checks that every candidate scored the same files, in order.
func sameFiles(cands [][]File) error {
	if len(cands) == 0 {
		return fmt.Errorf("nab: no candidate")
	}
	for k, c := range cands[1:] {
		if len(c) != len(cands[0]) {
			return fmt.Errorf("nab: candidate %d has %d files, candidate 0 %d", k+1, len(c), len(cands[0]))
		}
		for i := range c {
			if c[i].Name != cands[0][i].Name {
				return fmt.Errorf("nab: candidate %d's file %d is %s, candidate 0's %s", k+1, i, c[i].Name, cands[0][i].Name)
			}
		}
	}
	return nil
}
