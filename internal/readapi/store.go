// Package readapi keeps the latest forecast of every series, its path
// and band, a summary of how its model does and its open events, and
// serves them as a small JSON API on the daemon's HTTP port
// (docs/api.md):
//
//	GET /api/v1/series?match=GLOB&limit=N&after=CURSOR   a page of series
//	GET /api/v1/series/{key}                             one series
//
// and, with nats_service, on NATS as the micro service forecastd-api
// ([Store.AddService]).
//
// The [Store] is a sink (sinks.Sink, registered as the kind "api",
// [output.api]): it is handed every record from the shards and copies
// what it keeps under a lock of the series' own, so a reader never waits
// on a shard, nor a shard on a reader for longer than one series' copy.
package readapi

import (
	"cmp"
	"context"
	"hash/maphash"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/anomaly/threshold"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/sinks"
)

// stripes splits the series map, each part under its own lock.
const stripes = 64

// evictSample is how many series an insertion into a full part compares
// to evict the least recently written.
const evictSample = 8

// Store holds the latest state of up to a bound of series.
type Store struct {
	seed    maphash.Seed
	perPart int
	maxPage int
	parts   [stripes]part
	clock   atomic.Uint64 // stamps writes, for eviction
	idx     index

	evicted atomic.Uint64
	closed  atomic.Bool
	svc     service
}

type part struct {
	mu sync.RWMutex
	m  map[string]*entry
}

// entry is a series' state: one resolution per step (the raw series has
// step ""), written by the series' shard, read by the API, under mu.
type entry struct {
	key    string
	stamp  atomic.Uint64
	mu     sync.Mutex
	resols []resolution
}

// resolution is the latest of one series at one step.
type resolution struct {
	step, model, subject string
	tags                 []pipeline.Tag // shared with the series, never modified
	origin, time         time.Time
	value, lower, upper  float64
	path                 []pipeline.Step // a copy, its buffer reused
	forecasts, outcomes  uint64
	absErr               float64 // sum of |y − ŷ| over the outcomes
	last                 lastOutcome
	thresholds           []openThreshold
	anomaly              openAnomaly
}

type lastOutcome struct {
	time                    time.Time
	actual, forecast, score float64
	set                     bool
}

type openThreshold struct {
	value                        float64
	dir                          threshold.Direction
	opened, at                   time.Time
	crossing                     bool
	prob, forecast, lower, upper float64
}

type openAnomaly struct {
	open     bool
	opened   time.Time
	side     anomaly.Direction
	score    float64
	extreme  bool
	seasonal bool
}

// NewStore returns a store of at most maxSeries series (at least
// stripes); beyond, a new series evicts one of the least recently
// written.
func NewStore(maxSeries int) *Store {
	s := &Store{seed: maphash.MakeSeed(), perPart: max(1, (maxSeries+stripes-1)/stripes), maxPage: DefaultMaxLimit}
	for i := range s.parts {
		s.parts[i].m = map[string]*entry{}
	}
	return s
}

var _ sinks.Sink = (*Store)(nil)

// Write keeps what r says of its series. It is called from every shard
// at once; it locks the series' own entry (and its part's map, shared,
// for the lookup) and, once the series is known and its path's buffer
// large enough, does not allocate.
func (s *Store) Write(r sinks.Record) error {
	if s.closed.Load() {
		return sinks.ErrClosed
	}
	e := s.entry(r.Series)
	e.stamp.Store(s.clock.Add(1))
	e.mu.Lock()
	defer e.mu.Unlock()
	res := e.resolution(&r)
	switch r.Kind {
	case sinks.KindForecast:
		res.forecast(&r.Forecast)
	case sinks.KindOutcome:
		res.outcome(&r.Outcome)
	}
	return nil
}

// entry returns the series' entry, adding it (and evicting another if
// its part is full) if it has none. The index is told after the part's
// lock is released: the index's reader locks the parts.
func (s *Store) entry(key string) *entry {
	p := &s.parts[maphash.String(s.seed, key)%stripes]
	p.mu.RLock()
	e := p.m[key]
	p.mu.RUnlock()
	if e != nil {
		return e
	}
	p.mu.Lock()
	if e = p.m[key]; e != nil {
		p.mu.Unlock()
		return e
	}
	victim := ""
	if len(p.m) >= s.perPart {
		victim = s.evict(p)
	}
	e = &entry{key: key}
	p.m[key] = e
	p.mu.Unlock()
	if victim != "" {
		s.idx.remove(victim)
	}
	s.idx.add(key)
	return e
}

// evict removes the least recently written of a sample of p's series and
// returns its key; p.mu is held.
func (s *Store) evict(p *part) string {
	var victim *entry
	n := 0
	for _, e := range p.m { // map order: a random sample
		if victim == nil || e.stamp.Load() < victim.stamp.Load() {
			victim = e
		}
		if n++; n == evictSample {
			break
		}
	}
	delete(p.m, victim.key)
	s.evicted.Add(1)
	return victim.key
}

// lookup returns the series' entry, or nil.
func (s *Store) lookup(key string) *entry {
	p := &s.parts[maphash.String(s.seed, key)%stripes]
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.m[key]
}

// resolution returns the entry's resolution of r's step, adding it; e.mu
// is held.
func (e *entry) resolution(r *sinks.Record) *resolution {
	for i := range e.resols {
		if e.resols[i].step == r.Step {
			res := &e.resols[i]
			res.model, res.subject, res.tags = r.Model, r.Subject, r.Tags
			return res
		}
	}
	e.resols = append(e.resols, resolution{step: r.Step, model: r.Model, subject: r.Subject, tags: r.Tags,
		value: math.NaN(), lower: math.NaN(), upper: math.NaN()})
	slices.SortFunc(e.resols, func(a, b resolution) int { return cmp.Compare(a.step, b.step) })
	for i := range e.resols {
		if e.resols[i].step == r.Step {
			return &e.resols[i]
		}
	}
	panic("unreachable")
}

func (res *resolution) forecast(f *pipeline.Forecast) {
	res.forecasts++
	res.origin, res.time, res.value, res.lower, res.upper = f.Origin, f.Time, f.Value, f.Lower, f.Upper
	res.path = append(res.path[:0], f.Path...)
	for i := range f.Thresholds {
		res.threshold(f.Origin, &f.Thresholds[i])
	}
}

// threshold records an observation's event: an opened or updated event
// is open, a closed one no longer.
func (res *resolution) threshold(origin time.Time, o *threshold.Observation) {
	i := slices.IndexFunc(res.thresholds, func(t openThreshold) bool { return t.value == o.Value && t.dir == o.Direction })
	switch o.Event {
	case threshold.None:
		return
	case threshold.Closed:
		if i >= 0 {
			res.thresholds = slices.Delete(res.thresholds, i, i+1)
		}
		return
	}
	t := openThreshold{value: o.Value, dir: o.Direction, opened: origin, at: o.At, crossing: o.Crossing,
		prob: o.Probability, forecast: o.Forecast, lower: o.Lower, upper: o.Upper}
	if i < 0 {
		res.thresholds = append(res.thresholds, t)
		return
	}
	if o.Event == threshold.Updated {
		t.opened = res.thresholds[i].opened
	}
	res.thresholds[i] = t
}

func (res *resolution) outcome(o *pipeline.Outcome) {
	res.outcomes++
	res.absErr += math.Abs(o.Actual - o.Forecast.Value)
	res.last = lastOutcome{time: o.Time, actual: o.Actual, forecast: o.Forecast.Value, score: o.Anomaly.Score, set: true}
	a := &o.Anomaly
	switch a.Event {
	case anomaly.Opened:
		res.anomaly = openAnomaly{open: true, opened: o.Time, side: a.Side, score: a.Score, extreme: a.Extreme, seasonal: a.Seasonal}
	case anomaly.Closed:
		res.anomaly = openAnomaly{}
	}
}

// Flush does nothing: what is written is kept at once.
func (s *Store) Flush(context.Context) error { return nil }

// Close stops taking records (Write returns sinks.ErrClosed) and stops
// the NATS service, if any; what is held stays readable over HTTP.
func (s *Store) Close(context.Context) error {
	s.closed.Store(true)
	return s.stopService()
}

// index is the series' keys in order, for paging: a sorted snapshot, and
// the keys added and evicted since, merged into it by the next reader.
type index struct {
	mu      sync.Mutex
	sorted  []string
	added   []string
	removed map[string]struct{}
}

func (x *index) add(key string) {
	x.mu.Lock()
	x.added = append(x.added, key)
	x.mu.Unlock()
}

func (x *index) remove(key string) {
	x.mu.Lock()
	if x.removed == nil {
		x.removed = map[string]struct{}{}
	}
	x.removed[key] = struct{}{}
	x.mu.Unlock()
}

// mergeAt is how many keys added since the last merge make the next
// reader merge them into the sorted snapshot (an O(n) copy); fewer are
// sorted apart and read beside it.
func mergeAt(n int) int { return max(1024, n/16) }

// keys returns the keys in two sorted slices, to be read merged: the
// snapshot, and the keys added since (a copy). Once enough were added,
// or keys were removed and as many added, it merges them first (held
// tells whether a key removed was added again). Neither slice may be
// modified.
func (x *index) keys(held func(string) bool) (sorted, added []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.added) < mergeAt(len(x.sorted)) && len(x.removed) < mergeAt(len(x.sorted)) {
		sort.Strings(x.added)
		return x.sorted, slices.Clone(x.added)
	}
	sort.Strings(x.added)
	merged := make([]string, 0, len(x.sorted)+len(x.added))
	i, j := 0, 0
	for i < len(x.sorted) || j < len(x.added) {
		var k string
		if j == len(x.added) || i < len(x.sorted) && x.sorted[i] <= x.added[j] {
			k, i = x.sorted[i], i+1
		} else {
			k, j = x.added[j], j+1
		}
		if len(merged) > 0 && merged[len(merged)-1] == k {
			continue
		}
		if _, gone := x.removed[k]; gone && !held(k) {
			continue
		}
		merged = append(merged, k)
	}
	x.sorted, x.added = merged, x.added[:0]
	clear(x.removed)
	return x.sorted, nil
}
