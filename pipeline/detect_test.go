package pipeline

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/forecastd/forecastd/embedding"
)

// hourlyByIndex returns n points of a daily and weekly pattern timed a
// second apart (as a file without a time column is read): the default
// seasons (a day, a week) are far beyond MaxSeason points.
func hourlyByIndex(n int) []Point {
	r := rand.New(rand.NewPCG(5, 6))
	out := make([]Point, n)
	for i := range out {
		w := 1.0
		if (i/24)%7 >= 5 {
			w = 0.3
		}
		v := 100 + 20*w*math.Sin(2*math.Pi*float64(i%24)/24) + r.NormFloat64()
		out[i] = Point{time.Unix(int64(i), 0), v}
	}
	return out
}

// TestSeasonsDetected: a series whose spacing fits no configured season
// finds its daily period on detectFirst values and its weekly one on
// embedding.DetectLen, and a series restored between the two goes on as
// the series itself, bit for bit, finding the weekly period too.
func TestSeasonsDetected(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Horizon = 12
	pts := hourlyByIndex(900)
	s := mustNew(t, cfg)
	for i, p := range pts {
		if _, err := s.Push(p); err != nil {
			t.Fatal(err)
		}
		switch i + 1 {
		case detectFirst - 1:
			if s.changes.Seasons() != nil {
				t.Fatalf("seasons %v before %d values", s.changes.Seasons(), detectFirst)
			}
		case detectFirst:
			if got := s.changes.Seasons(); !slices.Equal(got, []int{24, 0}) {
				t.Fatalf("after %d values seasons %v, want [24 0]", detectFirst, got)
			}
		case embedding.DetectLen:
			if got := s.changes.Seasons(); !slices.Equal(got, []int{24, 168}) {
				t.Fatalf("after %d values seasons %v, want [24 168]", embedding.DetectLen, got)
			}
		}
	}
	// A series restored before the first detection or between the two,
	// fed the points after the cut, goes on as the series itself.
	for _, at := range []int{100, 400} {
		s2 := mustNew(t, cfg)
		var cut *Series
		for i, p := range pts {
			if i == at {
				st, err := s2.Export()
				if err != nil {
					t.Fatal(err)
				}
				if cut, err = Restore(s2.Key(), cfg, st); err != nil {
					t.Fatal(err)
				}
				if at > detectFirst && !cut.detecting {
					t.Fatal("the restored series does not detect again")
				}
			}
			a, err := s2.Push(p)
			if err != nil {
				t.Fatal(err)
			}
			if cut == nil {
				continue
			}
			b, err := cut.Push(p)
			if err != nil {
				t.Fatal(err)
			}
			if !sameForecast(a.Forecast, b.Forecast) || !slices.EqualFunc(a.Forecast.Path, b.Forecast.Path, sameStep) {
				t.Fatalf("cut at %d, point %d: restored %+v, want %+v", at, i, b.Forecast, a.Forecast)
			}
		}
		if got := cut.changes.Seasons(); !slices.Equal(got, []int{24, 168}) {
			t.Fatalf("cut at %d: the restored series found %v, want [24 168]", at, got)
		}
		if a, b := s2.changes.State(), cut.changes.State(); !reflect.DeepEqual(a, b) {
			t.Fatalf("cut at %d: the restored series' change features differ", at)
		}
	}
}

// TestSeasonsDetectingAllocatesNothing: while a series waits for the
// values its periods are detected from, a point allocates nothing (the
// ring having grown to hold them).
func TestSeasonsDetectingAllocatesNothing(t *testing.T) {
	s := mustNew(t, DefaultConfig())
	pts := hourlyByIndex(detectFirst)
	for _, p := range pts[:140] {
		if _, err := s.Push(p); err != nil {
			t.Fatal(err)
		}
	}
	i := 140
	if a := testing.AllocsPerRun(100, func() {
		if _, err := s.Push(pts[i]); err != nil {
			t.Fatal(err)
		}
		i++
	}); a != 0 || s.changes.Seasons() != nil {
		t.Fatalf("%v allocations per point while detecting (seasons %v)", a, s.changes.Seasons())
	}
}
