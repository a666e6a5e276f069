package nab

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var t0 = time.Date(2014, 4, 1, 0, 0, 0, 0, time.UTC)

// file returns 1000 points 5 min apart (probation: the first 150) with one
// window over points 500–599 (width 100), firing (score 1) at the given
// points and scoring the others 0.
func file(fire ...int) File {
	f := File{Name: "f.csv", Windows: []Window{{t0.Add(500 * 5 * time.Minute), t0.Add(599 * 5 * time.Minute)}}}
	for i := 0; i < 1000; i++ {
		f.Times = append(f.Times, t0.Add(time.Duration(i)*5*time.Minute))
		f.Scores = append(f.Scores, 0)
	}
	for _, i := range fire {
		f.Scores[i] = 1
	}
	return f
}

// The expected values below are worked by hand from the paper's definition
// with σ(y) = 2/(1 + e^{5y}) − 1 = tanh(−2.5 y), so maxTP = σ(−1) = tanh(2.5):
// null = −1 (one window missed), perfect = +1, score = 100·(raw + 1)/2.
func TestHandComputed(t *testing.T) {
	maxTP := math.Tanh(2.5)
	for _, c := range []struct {
		name string
		fire []int
		raw  float64
		tp   int
		fp   int
	}{
		{"never fires", nil, -1, 0, 0},
		{"at the window's start", []int{500}, 1, 1, 0},
		{"at the start and again inside", []int{500, 550}, 1, 1, 0},
		{"at the window's end: position −1/100", []int{599}, math.Tanh(0.025) / maxTP, 1, 0},
		{"half way: position −50/100", []int{550}, math.Tanh(1.25) / maxTP, 1, 0},
		{"before any window: −A_FP", []int{300}, -1 - 0.11, 0, 1},
		{"in probation: not scored", []int{100}, -1, 0, 0},
		{"101 past the end: position 101/99", []int{700}, -1 - 0.11*math.Tanh(2.5*101/99), 0, 1},
		{"more than 3 widths past: −A_FP", []int{999}, -1 - 0.11, 0, 1},
		{"a detection and a false positive", []int{300, 500}, 1 - 0.11, 1, 1},
	} {
		r, err := At([]File{file(c.fire...)}, Standard, 0.5)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(r.Raw-c.raw) > 1e-12 || r.TP != c.tp || r.FP != c.fp || r.FN != 1-c.tp {
			t.Errorf("%s: raw %v tp %d fp %d fn %d, want raw %v tp %d fp %d", c.name, r.Raw, r.TP, r.FP, r.FN, c.raw, c.tp, c.fp)
		}
		if want := 100 * (c.raw + 1) / 2; math.Abs(r.Score-want) > 1e-9 {
			t.Errorf("%s: score %v, want %v", c.name, r.Score, want)
		}
	}
}

// TestBestThreshold: a false positive scored 0.9 and a detection at the
// window's start scored 0.8. Thresholds above 0.9: nothing, 0; at 0.9: the
// false positive, 100·(−0.11)/2 = −5.5; at 0.8 both, 100·(2 − 0.11)/2 =
// 94.5; at 0 every point of 850 fires. Best picks 0.8.
func TestBestThreshold(t *testing.T) {
	f := file()
	f.Scores[300], f.Scores[500] = 0.9, 0.8
	for th, want := range map[float64]float64{2: 0, 0.9: -5.5, 0.85: -5.5, 0.8: 94.5} {
		r, err := At([]File{f}, Standard, th)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(r.Score-want) > 1e-9 {
			t.Errorf("threshold %v: score %v, want %v", th, r.Score, want)
		}
	}
	b, err := Best([]File{f}, Standard)
	if err != nil {
		t.Fatal(err)
	}
	if b.Threshold != 0.8 || math.Abs(b.Score-94.5) > 1e-9 {
		t.Errorf("best: threshold %v score %v, want 0.8 and 94.5", b.Threshold, b.Score)
	}
}

// TestCorpusNormalisation: two files, one perfect and one never firing,
// score 50; windows entirely in probation do not count.
func TestCorpusNormalisation(t *testing.T) {
	a, b := file(500), file()
	a.Name, b.Name = "a.csv", "b.csv"
	c := file()
	c.Name = "c.csv"
	c.Windows = []Window{{t0, t0.Add(10 * 5 * time.Minute)}}
	r, err := At([]File{a, b, c}, Standard, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if r.Null != -2 || r.Perfect != 2 || math.Abs(r.Score-50) > 1e-9 {
		t.Errorf("null %v perfect %v score %v, want −2, 2, 50", r.Null, r.Perfect, r.Score)
	}
}

func TestBadInput(t *testing.T) {
	f := file()
	f.Scores = f.Scores[:10]
	if _, err := At([]File{f}, Standard, 1); err == nil {
		t.Error("times and scores of different lengths accepted")
	}
	g := file()
	g.Windows = append(g.Windows, Window{t0.Add(550 * 5 * time.Minute), t0.Add(650 * 5 * time.Minute)})
	if _, err := At([]File{g}, Standard, 1); err == nil {
		t.Error("overlapping windows accepted")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "w.json")
	os.WriteFile(p, []byte(`{"x.csv": [["2014-04-10 07:15:00.000000", "2014-04-09 16:45:00.000000"]]}`), 0o644)
	if _, err := LoadWindows(p); err == nil {
		t.Error("a window ending before its start accepted")
	}
}

func TestLoadSharedWindows(t *testing.T) {
	ws, err := LoadWindows("../../testdata/nabcorpus/anomaly_windows.json")
	if os.IsNotExist(err) && os.Getenv("CI") != "true" {
		t.Skip("shared NAB data not present")
	}
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, w := range ws {
		n += len(w)
	}
	if len(ws) != 41 || n != 69 {
		t.Errorf("%d files, %d windows; want 41 and 69", len(ws), n)
	}
	w := ws["artificialWithAnomaly/art_daily_flatmiddle.csv"][0]
	if want := time.Date(2014, 4, 10, 7, 15, 0, 0, time.UTC); !w.Start.Equal(want) {
		t.Errorf("first window starts %v, want %v", w.Start, want)
	}
}
