package pipeline

import "time"

// Prime learns pts, the series' past at its resolution (with a step, one
// point per bucket, already aggregated and dated by the bucket's start),
// as Push would in time order, but emitting nothing: seasonal lags, scale
// and interval calibration are then warm for the first live point. It is
// meant for a new series, before its first live point; with a step, a raw
// point before the end of the last bucket primed is then late. It returns
// the points learned; a point refused (out of order, not finite,
// implausible) is counted in Stats as Push counts it. O(len(pts)) Pushes.
func (s *Series) Prime(pts []Point) int { return s.prime(pts, nil) }

// primeSlice is how long a history worker primes before it yields its
// processor (Runner.yieldPriming).
const primeSlice = 100 * time.Microsecond

// PrimeYield is Prime calling yield after each PrimeSlice of priming, so
// that a long past primed off the shards leaves the live points their
// processor (runner's warm start).
func (s *Series) PrimeYield(pts []Point, yield func()) int { return s.prime(pts, yield) }

// PrimeSlice is how long PrimeYield primes between two yields.
const PrimeSlice = 100 * time.Microsecond

// prime is Prime; with a yield, it calls it after each PrimeSlice of
// priming.
func (s *Series) prime(pts []Point, yield func()) int {
	n := 0
	var last time.Time
	slice := time.Now()
	for _, p := range pts {
		if yield != nil && time.Since(slice) >= PrimeSlice {
			yield()
			slice = time.Now()
		}
		if _, err := s.push(p); err != nil {
			continue // counted by push
		}
		n++
		last = p.Time
	}
	// The forecast made from the last point primed is the first live
	// point's: it is kept pending, as after any Push.
	if s.buckets != nil && n > 0 {
		b := s.buckets
		if end := b.bucketOf(last.UnixNano()) + int64(b.step); !b.open && end > b.closedEnd {
			b.closedEnd = end
		}
	}
	return n
}

// NewShared is New with a configuration the series shares, unchanged,
// with others made from it: the caller must not change *cfg while they
// live (the runner's rules hold one per rule).
func NewShared(key string, cfg *Config) (*Series, error) { return newSeries(key, cfg) }

// SharedConfig returns the configuration the series was made with, shared
// (NewShared): read only.
func (s *Series) SharedConfig() *Config { return s.cfg }

// Pending returns the forecast made for the next point, if there is one:
// after a prime, the first live point's.
func (s *Series) Pending() (Forecast, bool) { return s.pendingForecast, s.havePending }

// LastTime returns the time of the last point learned.
func (s *Series) LastTime() time.Time { return s.lastTime }

// Model returns the series' regressor, for optional capabilities found by
// type assertion (the runner's ladder statistics).
func (s *Series) Model() Model { return s.model.reg }

// RestoreShared is Restore with a configuration the series shares
// (NewShared).
func RestoreShared(key string, cfg *Config, st SeriesState) (*Series, error) {
	return restoreSeries(key, cfg, st)
}

// NewWaiting returns a series that holds only its key and shared
// configuration and takes no point: the runner's place for a series whose
// past is loaded and primed off its shard, replaced by the primed one.
func NewWaiting(key string, cfg *Config) *Series { return &Series{key: key, cfg: cfg} }
