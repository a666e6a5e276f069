package thresholdbench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/forecastd/forecastd/anomaly/threshold"
	"github.com/forecastd/forecastd/pipeline"
)

// Episode is one alert: when it started firing, when it stopped (zero:
// still firing at the end), and the crossing time it predicted when it
// started (zero: none).
type Episode struct {
	Start, End time.Time
	ETA        time.Time
}

// Method is an alerting rule run over a scenario.
type Method struct {
	// Name labels the method's rows.
	Name string
	// Lookahead is how far ahead the method's alert claims the disk will
	// be full: an alert is true if the disk fills within Lookahead of its
	// start.
	Lookahead time.Duration
	// Run returns the method's alerts on s.
	Run func(s *Scenario) ([]Episode, error)
}

// PredictLinear is the node-mixin's rule, evaluated every minute as
// Prometheus does: predict_linear(avail[window], ahead) < 0 (and, with
// guard > 0, avail/size·100 < guard, the mixin's
// NodeFilesystemSpaceFillingUp: 40 with 24 h, 15 with 4 h), firing once
// true at every evaluation for forDur. An alert's ETA is where the
// regression line meets 0 when it starts firing.
func PredictLinear(window, ahead, forDur time.Duration, guard float64) Method {
	name := fmt.Sprintf("predict_linear(avail[%s], %s) < 0, for: %s", short(window), short(ahead), short(forDur))
	if guard > 0 {
		name = fmt.Sprintf("node-mixin: avail < %g %% and %s", guard, name)
	}
	return Method{Name: name, Lookahead: ahead, Run: func(s *Scenario) ([]Episode, error) {
		return predictLinear(s, window, ahead, forDur, guard), nil
	}}
}

func short(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

func predictLinear(s *Scenario, window, ahead, forDur time.Duration, guard float64) []Episode {
	n := len(s.Avail)
	// Prefix sums of 1, i, i², y, i·y over the samples (i exact in float64).
	si, sii, sy, siy := make([]float64, n+1), make([]float64, n+1), make([]float64, n+1), make([]float64, n+1)
	for i, y := range s.Avail {
		x := float64(i)
		si[i+1], sii[i+1], sy[i+1], siy[i+1] = si[i]+x, sii[i]+x*x, sy[i]+y, siy[i]+x*y
	}
	w := int(window / s.Spacing)          // samples in (t − window, t]
	every := int(time.Minute / s.Spacing) // evaluations every minute
	every = max(every, 1)
	sp := s.Spacing.Seconds()
	var out []Episode
	var pending time.Time
	firing := false
	for b := w - 1; b < n; b += every {
		a := b - w + 1
		c := float64(w)
		mi, my := (si[b+1]-si[a])/c, (sy[b+1]-sy[a])/c
		vi := sii[b+1] - sii[a] - c*mi*mi
		cv := siy[b+1] - siy[a] - c*mi*my
		slope := cv / vi // per sample
		now := my + slope*(float64(b)-mi)
		pred := now + slope*ahead.Seconds()/sp
		t := s.Time(b)
		cond := pred < 0 && (guard <= 0 || s.Avail[b]/s.Size*100 < guard)
		switch {
		case cond && pending.IsZero():
			pending = t
			fallthrough
		case cond:
			if !firing && t.Sub(pending) >= forDur {
				firing = true
				ep := Episode{Start: t}
				if slope < 0 {
					ep.ETA = t.Add(time.Duration(-now / slope * sp * float64(time.Second)))
				}
				out = append(out, ep)
			}
		default:
			if firing {
				out[len(out)-1].End = t
			}
			pending, firing = time.Time{}, false
		}
	}
	return out
}

// Forecastd is forecastd's threshold "avail below 0" on a model of cfg
// (its Step and Horizon: an hourly model 48 ahead reaches two days),
// with th's probability and debounce. An alert starts with the event's
// opened, at the point that closed the bucket it was forecast from (when
// the daemon would publish it), and stops at closed; its ETA is the
// opened event's crossing time. Its lookahead is the horizon, or
// th.Within if that is shorter.
func Forecastd(name string, cfg pipeline.Config, th threshold.Config) Method {
	th.Value, th.Direction = 0, threshold.Below
	cfg.Thresholds = []threshold.Config{th}
	ahead := time.Duration(cfg.Horizon) * cfg.Step
	if th.Within > 0 {
		ahead = min(ahead, th.Within)
	}
	return Method{Name: name, Lookahead: ahead, Run: func(s *Scenario) ([]Episode, error) {
		ser, err := pipeline.New(s.Name, cfg)
		if err != nil {
			return nil, err
		}
		var out []Episode
		for i, v := range s.Avail {
			t := s.Time(i)
			res, err := ser.Push(pipeline.Point{Time: t, Value: v})
			if err != nil {
				return nil, fmt.Errorf("%s: point %d: %w", s.Name, i, err)
			}
			if !res.HasForecast {
				continue
			}
			o := res.Forecast.Thresholds[0]
			switch o.Event {
			case threshold.Opened:
				out = append(out, Episode{Start: t, ETA: o.At})
			case threshold.Closed:
				out[len(out)-1].End = t
			}
		}
		return out, nil
	}}
}

// Row is one method's score on a set of scenarios.
type Row struct {
	Method, Set string
	// Crossings counts the disks that filled; Detected those with a true
	// alert before (an alert that started at most Lookahead before the
	// crossing).
	Crossings, Detected int
	// Leads are the detected crossings' lead times: from the first true
	// alert's start to the crossing.
	Leads []time.Duration
	// Alerts counts the alerts that started before the crossing (or at
	// all, on a disk that never fills); False those that were not true.
	Alerts, False int
	// ETAErrors are, per detected crossing, |ETA − crossing| over the
	// lead time, of the first true alert.
	ETAErrors []float64
	// FalseBy names the scenarios of the false alerts, with their counts.
	FalseBy map[string]int
}

// Score runs m over the scenarios and scores its alerts.
func Score(m Method, set string, ss []Scenario) (Row, error) {
	row := Row{Method: m.Name, Set: set, FalseBy: map[string]int{}}
	for i := range ss {
		s := &ss[i]
		eps, err := m.Run(s)
		if err != nil {
			return row, err
		}
		tc, crossed := s.Crossing()
		if crossed {
			row.Crossings++
		}
		found := false
		for _, ep := range eps {
			if crossed && !ep.Start.Before(tc) {
				continue // the disk is full already
			}
			row.Alerts++
			if !crossed || tc.Sub(ep.Start) > m.Lookahead {
				row.False++
				row.FalseBy[s.Kind]++
				continue
			}
			if found {
				continue
			}
			found = true
			lead := tc.Sub(ep.Start)
			row.Detected++
			row.Leads = append(row.Leads, lead)
			if !ep.ETA.IsZero() && lead > 0 {
				row.ETAErrors = append(row.ETAErrors, math.Abs(float64(ep.ETA.Sub(tc)))/float64(lead))
			}
		}
	}
	return row, nil
}

// Median returns the median of xs (NaN if empty).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// MedianLead returns the median lead time in hours.
func (r Row) MedianLead() float64 {
	h := make([]float64, len(r.Leads))
	for i, d := range r.Leads {
		h[i] = d.Hours()
	}
	return Median(h)
}

// WriteTable writes rows as an aligned table.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "set\tmethod\tdetected\tmedian lead (h)\talerts\tfalse\tmedian |ETA error|\tfalse alerts by kind")
	for _, r := range rows {
		var by []string
		for _, k := range Kinds {
			if n := r.FalseBy[k]; n > 0 {
				by = append(by, fmt.Sprintf("%s %d", k, n))
			}
		}
		eta := "–"
		if len(r.ETAErrors) > 0 {
			eta = fmt.Sprintf("%.1f %%", 100*Median(r.ETAErrors))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%.1f\t%d\t%d\t%s\t%s\n", r.Set, r.Method, r.Detected, r.Crossings, r.MedianLead(), r.Alerts, r.False, eta, strings.Join(by, ", "))
	}
	return tw.Flush()
}
