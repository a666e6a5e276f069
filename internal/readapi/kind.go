package readapi

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/sinks"
)

func init() { sinks.Register(kind{}) }

// Defaults of Config's zero fields.
const (
	DefaultMaxSeries = 100000
	DefaultMaxLimit  = 1000
)

// Config is [output.api].
type Config struct {
	// MaxSeries bounds the series held (default 100000); beyond, a new
	// series evicts one of the least recently written.
	MaxSeries int `toml:"max_series" doc:"series held, at most (0: the default); beyond, a new one evicts one of the least recently written"`
	// MaxLimit bounds a page's limit (default 1000).
	MaxLimit int `toml:"max_limit" doc:"the largest limit a page of GET /api/v1/series may ask (0: the default)"`
	// NATSService also answers the API on the NATS output connection, as
	// the micro service forecastd-api (AddService).
	NATSService bool `toml:"nats_service" doc:"also answer on NATS, as the micro service forecastd-api (forecastd.api.series.list, forecastd.api.series.get)"`
}

// Validate reports negative bounds, each naming its key.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxSeries < 0 {
		errs = append(errs, fmt.Errorf("max_series: negative"))
	}
	if c.MaxLimit < 0 {
		errs = append(errs, fmt.Errorf("max_limit: negative"))
	}
	return errors.Join(errs...)
}

// WithDefaults returns c with its defaults filled in.
func (c Config) WithDefaults() Config {
	if c.MaxSeries == 0 {
		c.MaxSeries = DefaultMaxSeries
	}
	if c.MaxLimit == 0 {
		c.MaxLimit = DefaultMaxLimit
	}
	return c
}

// New returns the store of c.
func New(c Config) *Store {
	c = c.WithDefaults()
	s := NewStore(c.MaxSeries)
	s.maxPage = c.MaxLimit
	return s
}

// kind opens the Store of [output.api].
type kind struct{}

func (kind) Name() string { return "api" }

func (kind) Doc() string {
	return "If present, the latest forecast, path and open events of each series are kept in memory and served on [http] listen at /api/v1/series (docs/api.md)."
}

func (kind) NewConfig() any { return new(Config) }

func (kind) Open(_ context.Context, env sinks.Env) (sinks.Sink, error) {
	c, _ := env.Config.(*Config)
	if c == nil {
		return nil, nil
	}
	s := New(*c)
	if !c.NATSService || env.NATS == nil || env.NATS.Conn() == nil {
		return s, nil
	}
	if err := s.AddService(env.NATS.Conn()); err != nil {
		return nil, err
	}
	env.NATS.OnReplace(func(nc *nats.Conn) {
		if s.closed.Load() {
			return
		}
		if err := s.AddService(nc); err != nil {
			env.Logger.Warn("the read API no longer answers on NATS", "component", "readapi", "err", err)
		}
	})
	return s, nil
}

var (
	heldDesc    = prometheus.NewDesc(sinks.MetricPrefix+"api_series", "Series whose latest forecast the read API holds.", nil, nil)
	evictedDesc = prometheus.NewDesc(sinks.MetricPrefix+"api_series_evicted_total", "Series the read API evicted to hold a new one within max_series.", nil, nil)
	writtenDesc = sinks.NewDesc(sinks.MetricWritten, "api")
)

// Describe implements prometheus.Collector.
func (s *Store) Describe(ch chan<- *prometheus.Desc) {
	ch <- heldDesc
	ch <- evictedDesc
	ch <- writtenDesc
}

// Collect implements prometheus.Collector.
func (s *Store) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, float64(s.Len()))
	ch <- prometheus.MustNewConstMetric(evictedDesc, prometheus.CounterValue, float64(s.evicted.Load()))
	ch <- prometheus.MustNewConstMetric(writtenDesc, prometheus.CounterValue, float64(s.clock.Load()))
}

// Len returns the series held.
func (s *Store) Len() int {
	n := 0
	for i := range s.parts {
		p := &s.parts[i]
		p.mu.RLock()
		n += len(p.m)
		p.mu.RUnlock()
	}
	return n
}

// StoreBytes bounds what the store holds (check-config's memory
// estimate): max_series series, each with resolutions resolutions (the
// series' own and [[resolutions]]') whose paths are up to pathSteps
// steps, its entry, and its slots in the map and the index. The keys,
// tags and model names are the series' own strings, counted with them.
func (c *Config) StoreBytes(pathSteps, resolutions int) int64 {
	n := int64(c.WithDefaults().MaxSeries)
	res := int64(unsafe.Sizeof(resolution{})) + int64(max(1, pathSteps))*int64(unsafe.Sizeof(pipeline.Step{}))
	const slots = 2 * 64 // the part's map and the index
	return n * (int64(unsafe.Sizeof(entry{})) + slots + int64(max(1, resolutions))*res)
}
