// Package thresholdbench scores alerts before a threshold on a set of
// generated disks: forecastd's threshold events against the node-mixin's
// rule, predict_linear(avail[6h], T) < 0 with for: 1h, computed on the
// same data in the same run. The scenarios are made by Generate and kept
// in testdata/thresholds (WriteDir, ReadDir).
package thresholdbench

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Scenario is one disk's free space ("avail", in GB) sampled every
// Spacing from Start.
type Scenario struct {
	// Name is "<kind>-<seed>-<spacing>", the file's name.
	Name, Kind string
	Start      time.Time
	Spacing    time.Duration
	// Size is the disk's size in GB (the node-mixin's percentage guard).
	Size float64
	// Avail are the samples, ≥ 0.
	Avail []float64
}

// Time returns the time of sample i.
func (s *Scenario) Time(i int) time.Time { return s.Start.Add(time.Duration(i) * s.Spacing) }

// Crossing returns the time of the first sample at or below 0, and false
// if the disk never fills.
func (s *Scenario) Crossing() (time.Time, bool) {
	for i, v := range s.Avail {
		if v <= 0 {
			return s.Time(i), true
		}
	}
	return time.Time{}, false
}

// Kinds are the scenarios' kinds, in Generate's order: disks that fill
// linearly, in bursts, with a daily cycle, with cleanups that free space
// (and one whose cleanups stop), and that never fill (slow drift, and a
// nightly backup written and deleted).
var Kinds = []string{"linear", "bursts", "daily", "cleanup", "cleanup-stops", "never", "backup"}

// Generate returns the scenario set: each kind with seeds 1…seeds, at 10 s
// and at 1 min, over 5 days from 2024-05-06 00:00 UTC, a disk of 100 GB.
// The same arguments give the same set (math/rand/v2's PCG).
func Generate(seeds int) []Scenario {
	var out []Scenario
	for _, sp := range []time.Duration{10 * time.Second, time.Minute} {
		for _, k := range Kinds {
			for seed := 1; seed <= seeds; seed++ {
				out = append(out, generate(k, seed, sp))
			}
		}
	}
	return out
}

const (
	day     = 24 * time.Hour
	length  = 5 * day
	size    = 100.0
	afterGB = 1 * time.Hour // samples kept at 0 after the crossing
)

func generate(kind string, seed int, sp time.Duration) Scenario {
	g := &gen{r: rand.New(rand.NewPCG(uint64(seed), uint64(sp)+uint64(len(kind))*7919+uint64(kind[0]))),
		n: int(length / sp), dt: sp.Hours() / 24, sp: sp}
	s := Scenario{Name: fmt.Sprintf("%s-%d-%s", kind, seed, spacingName(sp)), Kind: kind,
		Start: time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC), Spacing: sp, Size: size}
	f, ok := kindAvail[kind]
	if !ok {
		panic("thresholdbench: unknown kind " + kind)
	}
	v := f(g, kind)
	// Clip at 0; keep an hour of a full disk after the crossing.
	for i, x := range v {
		if x <= 0 {
			end := min(len(v), i+int(afterGB/sp))
			for j := i; j < end; j++ {
				v[j] = 0
			}
			v = v[:end]
			break
		}
	}
	for i := range v {
		v[i] = math.Round(v[i]*1000) / 1000
	}
	s.Avail = v
	return s
}

// gen draws one scenario's samples: n of them, dt days apart.
type gen struct {
	r    *rand.Rand
	n    int
	dt   float64
	sp   time.Duration
	walk float64
}

// u draws uniformly from [a, b).
func (g *gen) u(a, b float64) float64 { return a + (b-a)*g.r.Float64() }

// step is the small writes and deletes: a random walk of 5 MB per
// √minute, measured with 10 MB of noise.
func (g *gen) step() float64 {
	g.walk += 0.005 * math.Sqrt(g.sp.Minutes()) * g.r.NormFloat64()
	return g.walk + 0.01*g.r.NormFloat64()
}

// kindAvail draws the free space of a disk of each kind.
var kindAvail = map[string]func(g *gen, kind string) []float64{
	"linear": func(g *gen, _ string) []float64 { // fills at a constant rate, full after 3.2–4.6 days
		v := make([]float64, 0, g.n)
		a0, tc := g.u(35, 60), g.u(3.2, 4.6)
		for i := range g.n {
			v = append(v, a0-a0/tc*float64(i)*g.dt+g.step())
		}
		return v
	},
	"bursts":        bursts,
	"daily":         daily,
	"cleanup":       cleanup,
	"cleanup-stops": cleanup,
	"never": func(g *gen, _ string) []float64 { // drifts by −0.5–+0.2 GB a day around 30–60 GB
		v := make([]float64, 0, g.n)
		a0, d := g.u(30, 60), g.u(-0.5, 0.2)
		for i := range g.n {
			v = append(v, a0+d*float64(i)*g.dt+g.step())
		}
		return v
	},
	"backup": backup,
}

// bursts: 2–4 GB a day, and bursts of 2–5 GB in 15 min every 3–6 h.
func bursts(g *gen, _ string) []float64 {
	v := make([]float64, 0, g.n)
	rate, every := g.u(2, 4), g.u(3, 6)/24
	mean := rate + 3.5/every
	a0 := mean * g.u(3.3, 4.5)
	used, next, left, burst := 0.0, g.u(0, every), 0.0, 0.0
	for i := range g.n {
		t := float64(i) * g.dt
		if t >= next && left <= 0 {
			left, burst = 15.0/(24*60), g.u(2, 5)
			next = t + every*g.u(0.6, 1.4)
		}
		used += rate * g.dt
		if left > 0 {
			used += burst * math.Min(g.dt, left) / (15.0 / (24 * 60))
			left -= g.dt
		}
		v = append(v, a0-used+g.step())
	}
	return v
}

// daily: 6–12 GB of working files by day, freed at night, over a net fill.
func daily(g *gen, _ string) []float64 {
	v := make([]float64, 0, g.n)
	amp, tc := g.u(6, 12), g.u(3.4, 4.6)
	a0 := g.u(40, 55)
	net := (a0 - amp) / (tc - 0.5) // full near the day's peak
	for i := range g.n {
		t := float64(i) * g.dt
		v = append(v, a0-net*t-amp*math.Max(0, math.Sin(2*math.Pi*(t-0.25)))+g.step())
	}
	return v
}

// cleanup: fills at 15–25 GB a day to 3–8 GB, cleaned back to 40–50;
// cleanup-stops: no cleanup after 2–2.8 days.
func cleanup(g *gen, kind string) []float64 {
	v := make([]float64, 0, g.n)
	top, low, rate := g.u(40, 50), g.u(3, 8), g.u(15, 25)
	stop := math.Inf(1)
	if kind == "cleanup-stops" {
		stop = g.u(2, 2.8) // no cleanup after this
	}
	a := top - g.u(0, top-low)
	for i := range g.n {
		t := float64(i) * g.dt
		a -= rate * g.dt
		if a <= low && t < stop {
			a = top
		}
		v = append(v, a+g.step())
	}
	return v
}

// backup: a nightly backup of 20–30 GB written from 02:00 in 40 min,
// deleted at 04:00.
func backup(g *gen, _ string) []float64 {
	v := make([]float64, 0, g.n)
	a0, b := g.u(35, 45), g.u(20, 30)
	for i := range g.n {
		h := math.Mod(float64(i)*g.dt, 1) * 24
		w := 0.0
		switch {
		case h >= 2 && h < 2+40.0/60:
			w = b * (h - 2) / (40.0 / 60)
		case h >= 2+40.0/60 && h < 4:
			w = b
		}
		v = append(v, a0-w+g.step())
	}
	return v
}

func spacingName(sp time.Duration) string {
	if sp%time.Minute == 0 {
		return strconv.Itoa(int(sp/time.Minute)) + "m"
	}
	return strconv.Itoa(int(sp/time.Second)) + "s"
}

// WriteDir writes each scenario to dir/<name>.csv.gz: a header line
// "# kind=… start=<RFC 3339> spacing=<duration> size=<GB>", then one
// value (GB, three decimals) per line.
func WriteDir(dir string, ss []Scenario) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, s := range ss {
		f, err := os.Create(filepath.Join(dir, s.Name+".csv.gz"))
		if err != nil {
			return err
		}
		zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
		w := bufio.NewWriter(zw)
		fmt.Fprintf(w, "# kind=%s start=%s spacing=%s size=%g\n", s.Kind, s.Start.Format(time.RFC3339), s.Spacing, s.Size)
		for _, v := range s.Avail {
			w.WriteString(strconv.FormatFloat(v, 'f', 3, 64))
			w.WriteByte('\n')
		}
		err = w.Flush()
		if e := zw.Close(); err == nil {
			err = e
		}
		if e := f.Close(); err == nil {
			err = e
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	return nil
}

// ReadDir reads the scenarios WriteDir wrote to dir, in name order.
func ReadDir(dir string) ([]Scenario, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.csv.gz"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("thresholdbench: no *.csv.gz in %s", dir)
	}
	slices.Sort(names)
	var out []Scenario
	for _, name := range names {
		s, err := readFile(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func readFile(name string) (Scenario, error) {
	f, err := os.Open(name)
	if err != nil {
		return Scenario{}, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return Scenario{}, err
	}
	sc := bufio.NewScanner(zr)
	s := Scenario{Name: strings.TrimSuffix(filepath.Base(name), ".csv.gz")}
	if !sc.Scan() {
		return s, fmt.Errorf("empty")
	}
	for _, kv := range strings.Fields(strings.TrimPrefix(sc.Text(), "#")) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "kind":
			s.Kind = v
		case "start":
			s.Start, err = time.Parse(time.RFC3339, v)
		case "spacing":
			s.Spacing, err = time.ParseDuration(v)
		case "size":
			s.Size, err = strconv.ParseFloat(v, 64)
		}
		if err != nil {
			return s, fmt.Errorf("header %s: %w", kv, err)
		}
	}
	if s.Spacing <= 0 || s.Size <= 0 {
		return s, fmt.Errorf("header without spacing or size")
	}
	for sc.Scan() {
		x, err := strconv.ParseFloat(sc.Text(), 64)
		if err != nil {
			return s, err
		}
		s.Avail = append(s.Avail, x)
	}
	return s, sc.Err()
}
