package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Formats the tool can publish, as the daemon's [input] data_format names
// them.
const (
	formatJSON   = "json"
	formatValue  = "value"
	formatInflux = "influx"
)

// timeLayout is RFC 3339 with nine fractional digits, as the daemon writes
// a forecast's "origin"; the JSON points carry their time in it too, which
// the daemon reads whatever its json_time_format.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// Config is one load run. Zero values are not defaults: main fills them
// from the flags and Validate checks them.
type Config struct {
	// Servers are the NATS URLs; every host must be a loopback address.
	Servers []string
	// Series is the number of series; series i publishes on
	// SubjectPrefix + ".s" + i (zero-padded to five digits or more).
	Series int
	// Rate is the measured points per second over all series; 0 publishes
	// as fast as the in-flight window allows.
	Rate float64
	// Duration bounds the measured phase.
	Duration time.Duration
	// Count bounds the measured points; 0: Duration alone.
	Count int
	// SubjectPrefix is the first part of the input subjects.
	SubjectPrefix string
	// ForecastPrefix is the daemon's [output.nats] subject_prefix: the
	// forecasts of subject S arrive on ForecastPrefix + "." + S.
	ForecastPrefix string
	// Format is json, value or influx (the daemon's data_format).
	Format string
	// Warmup is the points per series published, at full speed, before
	// the measured phase; they are not measured.
	Warmup int
	// Inflight bounds the points published whose forecast has not come
	// back (counted only for series that have had a forecast).
	Inflight int
	// Timeout bounds every wait: for room in the window (no forecast for
	// this long is a stall, and the run fails), and for the last
	// forecasts after the last publication.
	Timeout time.Duration
	// Seed seeds the series' noise.
	Seed uint64
	// PID, if not 0, is the daemon's process id: its resident memory
	// (VmRSS of /proc/PID/status) is read before the warm-up, after it and
	// after the measured phase, for Result's RSS fields, and its CPU time
	// (utime + stime of /proc/PID/stat) after the warm-up and after the
	// measured phase, for Result's CPU fields.
	PID int
}

// Validate returns every problem of c at once.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Servers) == 0 {
		errs = append(errs, errors.New("-servers: at least one URL"))
	}
	for _, s := range c.Servers {
		if err := checkLoopback(s); err != nil {
			errs = append(errs, fmt.Errorf("-servers: %w", err))
		}
	}
	if c.Series < 1 {
		errs = append(errs, fmt.Errorf("-series: must be positive, got %d", c.Series))
	}
	if c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) {
		errs = append(errs, fmt.Errorf("-rate: must be ≥ 0, got %v", c.Rate))
	}
	if c.Duration <= 0 {
		errs = append(errs, fmt.Errorf("-duration: must be positive, got %v", c.Duration))
	}
	if c.Count < 0 {
		errs = append(errs, fmt.Errorf("-count: must not be negative, got %d", c.Count))
	}
	if c.Warmup < 0 {
		errs = append(errs, fmt.Errorf("-warmup: must not be negative, got %d", c.Warmup))
	}
	if c.Inflight < 1 {
		errs = append(errs, fmt.Errorf("-inflight: must be positive, got %d", c.Inflight))
	}
	if c.PID < 0 {
		errs = append(errs, fmt.Errorf("-pid: must not be negative, got %d", c.PID))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("-timeout: must be positive, got %v", c.Timeout))
	}
	if c.SubjectPrefix == "" || strings.ContainsAny(c.SubjectPrefix, " \t\r\n*>") {
		errs = append(errs, fmt.Errorf("-subject_prefix: invalid %q", c.SubjectPrefix))
	}
	if c.ForecastPrefix == "" || strings.ContainsAny(c.ForecastPrefix, " \t\r\n*>") {
		errs = append(errs, fmt.Errorf("-forecast_prefix: invalid %q", c.ForecastPrefix))
	}
	switch c.Format {
	case formatJSON, formatValue, formatInflux:
	default:
		errs = append(errs, fmt.Errorf("-format: want json, value or influx, got %q", c.Format))
	}
	return errors.Join(errs...)
}

// checkLoopback refuses a server URL whose host is not localhost or a
// loopback IP address: the tool floods what it talks to.
func checkLoopback(s string) error {
	raw := s
	if !strings.Contains(raw, "://") {
		raw = "nats://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q: %w", s, err)
	}
	h := u.Hostname()
	if h == "localhost" {
		return nil
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%q: not a loopback address (localhost, 127.0.0.0/8, ::1)", s)
}

// Result is what a run measured. Rates are per second; latencies in
// milliseconds, from a point's publication to its forecast's arrival.
type Result struct {
	Series int     `json:"series"`
	Format string  `json:"format"`
	Rate   float64 `json:"rate"` // target, 0 = maximal

	WarmupPoints  int     `json:"warmup_points"`
	WarmupSeconds float64 `json:"warmup_seconds"`

	Published      int     `json:"published"`       // measured points
	PublishSeconds float64 `json:"publish_seconds"` // first to last measured publication
	OfferedRate    float64 `json:"offered_rate"`    // Published / PublishSeconds
	Forecasts      int     `json:"forecasts"`       // measured points whose forecast came back
	ForecastRate   float64 `json:"forecast_rate"`   // Forecasts / (first publication to last forecast)
	AcceptedRate   float64 `json:"accepted_rate"`   // (Published − Lost) / PublishSeconds
	Lost           int     `json:"lost"`            // measured points without a forecast
	LossRatio      float64 `json:"loss_ratio"`

	// Unmatched counts forecasts on the load subjects that matched no
	// outstanding point (a duplicate, or a point of an earlier run), once
	// the measured phase began.
	Unmatched int `json:"unmatched"`
	// WarmupUnmatched counts those of the warm-up. With the value format
	// (no time in a point) a series' first forecast is matched to the
	// newest point published before the daemon received its point, which
	// names the wrong one when the daemon is slower to receive a round of
	// warm-up points than the pause between rounds; the points the
	// measured phase publishes are matched in series order after it.
	WarmupUnmatched int `json:"warmup_unmatched,omitempty"`
	// Silent counts series that had no forecast at all.
	Silent int `json:"silent_series"`
	// Exact is false for the value format, whose points carry no time:
	// forecasts are then matched to points in each series' order.
	Exact bool `json:"exact_match"`

	P50 float64 `json:"latency_p50_ms"`
	P90 float64 `json:"latency_p90_ms"`
	P99 float64 `json:"latency_p99_ms"`
	Max float64 `json:"latency_max_ms"`

	// With Config.PID, the daemon's VmRSS in bytes before the warm-up,
	// after it, and after the measured phase; RSSPerSeries is
	// (RSSEnd − RSSStart) ÷ Series: what each series added to the
	// process, its share of the runtime's heap headroom included.
	RSSStart     int64   `json:"rss_start_bytes,omitempty"`
	RSSWarm      int64   `json:"rss_warm_bytes,omitempty"`
	RSSEnd       int64   `json:"rss_end_bytes,omitempty"`
	RSSPerSeries float64 `json:"rss_per_series_bytes,omitempty"`

	// With Config.PID, the CPU time the daemon spent from the end of the
	// warm-up to the last forecast of the measured phase, in seconds, and
	// that ÷ Published in µs: its CPU per point, its NATS server included
	// when embedded. LoadCPUPerPoint is the same for this tool's process,
	// which shares the machine.
	CPUSeconds      float64 `json:"cpu_seconds,omitempty"`
	CPUPerPoint     float64 `json:"cpu_per_point_us,omitempty"`
	LoadCPUPerPoint float64 `json:"load_cpu_per_point_us,omitempty"`

	// Err is why the run stopped early, if it did.
	Err string `json:"error,omitempty"`
}

// readRSS returns the resident memory of process pid in bytes, from the
// VmRSS line of /proc/pid/status.
func readRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("-pid: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v) // "123456 kB"
			if len(f) != 2 || f[1] != "kB" {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("-pid: /proc/%d/status: VmRSS %q: %w", pid, v, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("-pid: /proc/%d/status has no VmRSS line in kB", pid)
}

// clockTick is the unit of /proc/PID/stat's utime and stime: USER_HZ,
// which is 100 on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// readCPU returns the CPU time process pid has used, user and system, from
// /proc/pid/stat (0 for pid "self").
func readCPU(pid string) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, fmt.Errorf("-pid: %w", err)
	}
	// The command name, field 2, is in parentheses and may hold spaces;
	// utime and stime are fields 14 and 15, the 12th and 13th after it.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("-pid: /proc/%s/stat: %d fields after the name, want at least 13", pid, len(f))
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("-pid: /proc/%s/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// pend is a point published and not yet matched to a forecast.
type pend struct {
	t        int64 // publication time, Unix ns, and the point's data time
	measured bool
}

// series is one series' published points, oldest first.
type series struct {
	subject  string
	q        []pend
	head     int
	answered bool // a forecast has come back
	n        int  // points published
	phase    float64
}

// pop removes the oldest pending point of s; l.mu is held.
func (l *loader) pop(s *series) pend {
	l.pendingAll--
	p := s.q[s.head]
	s.head++
	if s.head == len(s.q) {
		s.q, s.head = s.q[:0], 0
	} else if s.head >= 1024 && s.head*2 >= len(s.q) {
		s.q = s.q[:copy(s.q, s.q[s.head:])]
		s.head = 0
	}
	return p
}

func (s *series) pending() int { return len(s.q) - s.head }

// loader holds a run's state. mu guards everything below it; the
// publisher and the forecast handler take it once per message.
type loader struct {
	cfg      Config
	progress chan struct{} // a forecast matched (capacity 1)

	mu          sync.Mutex
	series      []series
	lastT       int64 // last publication time handed out
	firstT      int64 // first measured publication
	outstanding int   // pending points of answered series
	pendingAll  int   // pending points of all series
	firstSeq    int   // index in its series of the first point answered, −1 before
	group       int   // series warmed up together
	published   int   // measured
	forecasts   int   // measured points matched
	lost        int   // measured points skipped by a later forecast
	unmatched   int
	warmMiss    int
	silent      int // series without a forecast yet
	lastArrival time.Time
	lat         []int64 // ns, measured points
}

// Run publishes cfg's load and measures the forecasts that come back. It
// returns a Result also when it fails part way (Result.Err says why), and
// nil only when it could not start.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &loader{cfg: cfg, progress: make(chan struct{}, 1), silent: cfg.Series, firstSeq: -1,
		group: max(1, cfg.Inflight/blindPerSeries)}
	width := max(5, len(strconv.Itoa(cfg.Series-1)))
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6c6f6164))
	l.series = make([]series, cfg.Series)
	for i := range l.series {
		l.series[i].subject = fmt.Sprintf("%s.s%0*d", cfg.SubjectPrefix, width, i)
		l.series[i].phase = rng.Float64() * 2 * math.Pi
	}

	url := strings.Join(cfg.Servers, ",")
	sub, err := nats.Connect(url, nats.Name("forecastd-load-sub"))
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer sub.Close()
	pub, err := nats.Connect(url, nats.Name("forecastd-load-pub"))
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer pub.Close()

	s, err := sub.Subscribe(cfg.ForecastPrefix+"."+cfg.SubjectPrefix+".>", l.onForecast)
	if err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	// The window bounds what is pending, but not forecasts of an earlier
	// run or of other publishers: never drop on the tool's side.
	if err := s.SetPendingLimits(-1, -1); err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	if err := sub.Flush(); err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}

	res := &Result{Series: cfg.Series, Format: cfg.Format, Rate: cfg.Rate, Exact: cfg.Format != formatValue}
	err = l.run(ctx, pub, rng, res)
	if err != nil {
		res.Err = err.Error()
	}
	_ = s.Unsubscribe()
	l.finish(res)
	return res, nil
}

// run warms every series up, then publishes at the configured rate and
// measures, into res, what the daemon of cfg.PID used meanwhile.
func (l *loader) run(ctx context.Context, pub *nats.Conn, rng *rand.Rand, res *Result) error {
	cfg := l.cfg
	pb := &publisher{nc: pub, format: cfg.Format, rng: rng}
	if err := l.rss(&res.RSSStart); err != nil {
		return err
	}
	if err := l.warmUp(ctx, pub, pb, res); err != nil {
		return err
	}
	if err := l.rss(&res.RSSWarm); err != nil {
		return err
	}
	var cpu0, self0 time.Duration
	if cfg.PID != 0 {
		var err error
		if cpu0, err = readCPU(strconv.Itoa(cfg.PID)); err != nil {
			return err
		}
		if self0, err = readCPU("self"); err != nil {
			return err
		}
	}
	if err := l.publishAll(ctx, pb, res); err != nil {
		return err
	}
	if err := pub.Flush(); err != nil {
		return err
	}
	if err := l.drain(ctx); err != nil {
		return err
	}
	if err := l.rss(&res.RSSEnd); err != nil {
		return err
	}
	if cfg.PID == 0 {
		return nil
	}
	res.RSSPerSeries = float64(res.RSSEnd-res.RSSStart) / float64(cfg.Series)
	cpu1, err := readCPU(strconv.Itoa(cfg.PID))
	if err != nil {
		return err
	}
	self1, err := readCPU("self")
	if err != nil {
		return err
	}
	res.CPUSeconds = (cpu1 - cpu0).Seconds()
	l.mu.Lock()
	n := l.published
	l.mu.Unlock()
	if n > 0 {
		res.CPUPerPoint = float64((cpu1 - cpu0).Microseconds()) / float64(n)
		res.LoadCPUPerPoint = float64((self1 - self0).Microseconds()) / float64(n)
	}
	return nil
}

// rss reads the resident set of the daemon (cfg.PID) into dst.
func (l *loader) rss(dst *int64) error {
	if l.cfg.PID == 0 {
		return nil
	}
	v, err := readRSS(l.cfg.PID)
	*dst = v
	return err
}

// warmUp publishes the warm-up points by groups of series, round robin
// within a group, so that few series are in their first points (blind)
// at once, and waits for their forecasts.
func (l *loader) warmUp(ctx context.Context, pub *nats.Conn, pb *publisher, res *Result) error {
	cfg := l.cfg
	start := time.Now()
	for g := 0; g < len(l.series); g += l.group {
		if err := l.warmGroup(ctx, pub, pb, g, min(g+l.group, len(l.series))); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	if cfg.Warmup > 0 {
		if err := pub.Flush(); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		if err := l.drain(ctx); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	res.WarmupPoints = cfg.Warmup * cfg.Series
	res.WarmupSeconds = time.Since(start).Seconds()
	return nil
}

// publishAll publishes the measured points, round robin over the series,
// each at its due time on an open-loop schedule of cfg.Rate (as fast as
// it can without one), until cfg.Count or cfg.Duration.
func (l *loader) publishAll(ctx context.Context, pb *publisher, res *Result) error {
	cfg := l.cfg
	start := time.Now()
	var last time.Time
	for n, i := 0, 0; cfg.Count == 0 || n < cfg.Count; n++ {
		now := time.Now()
		if now.Sub(start) >= cfg.Duration {
			break
		}
		if cfg.Rate > 0 {
			due := start.Add(time.Duration(float64(n) / cfg.Rate * 1e9))
			if d := due.Sub(now); d > 0 {
				if err := sleep(ctx, d); err != nil {
					return err
				}
			}
		}
		if err := l.publish(ctx, pb, i, true); err != nil {
			return err
		}
		last = time.Now()
		if i++; i == len(l.series) {
			i = 0
		}
	}
	res.PublishSeconds = last.Sub(start).Seconds()
	return nil
}

// warmGroup publishes -warmup points to each series in [from, to), round
// robin.
func (l *loader) warmGroup(ctx context.Context, pub *nats.Conn, pb *publisher, from, to int) error {
	for range l.cfg.Warmup {
		for i := from; i < to; i++ {
			if err := l.publish(ctx, pb, i, false); err != nil {
				return err
			}
		}
		if l.cfg.Format == formatValue {
			// Let the daemon receive the round before the next one, so
			// that a series' first forecast names its point (see
			// onForecast).
			if err := pub.Flush(); err != nil {
				return err
			}
			if err := l.quiet(ctx, 20*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// publish waits for room in the window, then publishes the next point of
// series i, stamped with a publication time strictly after every earlier
// one (so that a forecast's origin names its point).
func (l *loader) publish(ctx context.Context, pb *publisher, i int, measured bool) error {
	if err := l.waitRoom(ctx, l.cfg.Inflight, measured); err != nil {
		return err
	}
	l.mu.Lock()
	s := &l.series[i]
	t := time.Now().UnixNano()
	if t <= l.lastT {
		t = l.lastT + 1
	}
	l.lastT = t
	s.q = append(s.q, pend{t: t, measured: measured})
	l.pendingAll++
	if s.answered {
		l.outstanding++
	}
	if measured {
		if l.published == 0 {
			l.firstT = t
		}
		l.published++
	}
	k := s.n
	s.n++
	l.mu.Unlock()
	return pb.publish(s.subject, i, k, s.phase, t)
}

// waitRoom waits until fewer than limit points are outstanding and
// there is room for points of series that have had no forecast yet (the
// daemon's warm-up holds them; they are "blind"): blindPerSeries for each
// such series beyond the points a series took before its first forecast
// (firstSeq), or beyond -warmup in the warm-up before any series has
// answered; in the warm-up, for one group of series at most. A stretch of
// Timeout without a forecast is a stall.
func (l *loader) waitRoom(ctx context.Context, limit int, measured bool) error {
	for {
		l.mu.Lock()
		n, blind, silent := l.outstanding, l.pendingAll-l.outstanding, l.silent
		per := blindPerSeries
		switch {
		case l.firstSeq >= 0:
			per += l.firstSeq
		case !measured:
			per += l.cfg.Warmup
		}
		room := per * silent
		if !measured {
			room = per * min(silent, l.group)
		}
		l.mu.Unlock()
		if n < limit && (blind == 0 || blind < room) {
			return nil
		}
		if err := l.waitProgress(ctx, n, silent); err != nil {
			return err
		}
	}
}

// blindPerSeries bounds the points of a series that has not answered yet
// pending beyond those its warm-up takes.
const blindPerSeries = 16

func (l *loader) waitProgress(ctx context.Context, outstanding, silent int) error {
	t := time.NewTimer(l.cfg.Timeout)
	defer t.Stop()
	select {
	case <-l.progress:
		return nil
	case <-t.C:
		err := fmt.Errorf("stalled: no forecast for %v with %d points outstanding (points the daemon dropped, or of series it evicted, are never answered: check its forecastd_points_dropped_total and forecastd_series_evicted_total, and that [pipeline] max_series is above -series)", l.cfg.Timeout, outstanding)
		if silent > 0 {
			err = fmt.Errorf("%w; %d series have had no forecast (is -warmup shorter than the daemon's scale warm-up?)", err, silent)
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// quiet waits until no forecast has come for gap, or Timeout.
func (l *loader) quiet(ctx context.Context, gap time.Duration) error {
	deadline := time.NewTimer(l.cfg.Timeout)
	defer deadline.Stop()
	t := time.NewTimer(gap)
	defer t.Stop()
	for {
		select {
		case <-l.progress:
			t.Reset(gap)
		case <-t.C:
			return nil
		case <-deadline.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// drain waits until every series has had a forecast and every point of
// them has been matched or skipped. A stretch of Timeout without a
// forecast ends it: an error if points of answered series are still
// outstanding; otherwise the series that never answered are left to the
// summary (Result.Silent).
func (l *loader) drain(ctx context.Context) error {
	for {
		l.mu.Lock()
		n, silent := l.outstanding, l.silent
		l.mu.Unlock()
		if n == 0 && silent == 0 {
			return nil
		}
		if err := l.waitProgress(ctx, n, silent); err != nil {
			if n == 0 && ctx.Err() == nil {
				return nil
			}
			return fmt.Errorf("waiting for the last forecasts: %w", err)
		}
	}
}

// parseOrigin finds "origin" in a forecast's JSON body.
func parseOrigin(b []byte) (int64, bool) {
	const key = `"origin":"`
	j := strings.Index(string(b), key) // no copy: the compiler elides it
	if j < 0 {
		return 0, false
	}
	b = b[j+len(key):]
	k := strings.IndexByte(string(b), '"')
	if k < 0 {
		return 0, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(b[:k]))
	if err != nil {
		return 0, false
	}
	return t.UnixNano(), true
}

// finish fills res from the counters: what is still pending is lost.
func (l *loader) finish(res *Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lost := l.lost
	res.Silent = l.silent
	for i := range l.series {
		s := &l.series[i]
		for _, p := range s.q[s.head:] {
			if p.measured {
				lost++
			}
		}
	}
	res.Published = l.published
	res.Forecasts = l.forecasts
	res.Lost = lost
	res.Unmatched = l.unmatched
	res.WarmupUnmatched = l.warmMiss
	if res.Published > 0 {
		res.LossRatio = float64(lost) / float64(res.Published)
	}
	if res.PublishSeconds > 0 {
		res.OfferedRate = float64(res.Published) / res.PublishSeconds
		res.AcceptedRate = float64(res.Published-lost) / res.PublishSeconds
	}
	if len(l.lat) > 0 {
		// From the first measured publication to the last forecast.
		if span := l.lastArrival.UnixNano() - l.firstT; span > 0 {
			res.ForecastRate = float64(l.forecasts) / (float64(span) / 1e9)
		}
	}
	lat := slices.Clone(l.lat)
	slices.Sort(lat)
	res.P50 = quantile(lat, 0.50)
	res.P90 = quantile(lat, 0.90)
	res.P99 = quantile(lat, 0.99)
	res.Max = quantile(lat, 1)
}
