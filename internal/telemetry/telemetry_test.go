package telemetry_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/forecastd/forecastd/internal/telemetry"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
	"github.com/forecastd/forecastd/sources"
	"github.com/forecastd/forecastd/svr"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The getters' types are the components' own Stats methods.
var (
	_ func(*sources.Source) sources.Stats     = (*sources.Source).Stats
	_ func(*runner.Runner) runner.RunnerStats = (*runner.Runner).Stats
)

// fake stands for the components: its Stats change under a lock while
// the server scrapes them.
type fake struct {
	mu    sync.Mutex
	src   sources.Stats
	run   runner.RunnerStats
	ckpt  telemetry.CheckpointStats
	parts telemetry.PartitionStats
}

func (f *fake) config() telemetry.Config {
	return telemetry.Config{
		// The components' own collectors, served as the daemon serves
		// them: the input's first.
		Collectors: []prometheus.Collector{
			sources.NewCollector(func() sources.Stats {
				f.mu.Lock()
				defer f.mu.Unlock()
				st := f.src
				st.ParseErrors = make(map[sources.Reason]uint64)
				for r, n := range f.src.ParseErrors {
					st.ParseErrors[r] = n
				}
				return st
			}),
			runner.NewRunnerCollector(func() runner.RunnerStats { f.mu.Lock(); defer f.mu.Unlock(); return f.run }),
		},
		Checkpoints: func() telemetry.CheckpointStats {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.ckpt
		},
		Partitions: func() telemetry.PartitionStats { f.mu.Lock(); defer f.mu.Unlock(); return f.parts },
	}
}

func (f *fake) set(fn func(f *fake)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// serve starts a Server of h on 127.0.0.1:0 and returns its base URL and
// a client; both are closed at the end of the test.
func serve(t *testing.T, h http.Handler) (string, *http.Client) {
	t.Helper()
	s := telemetry.NewServer(h, nil)
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return "http://" + s.Addr().String(), &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// scrape GETs /metrics in the text format and parses it.
func scrape(t *testing.T, c *http.Client, base string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// sample finds the metric of family name with exactly the labels given
// as "k=v" pairs.
func sample(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	t.Helper()
	fam, ok := fams[name]
	if !ok {
		t.Fatalf("%s: no such family", name)
	}
	want := strings.Join(labels, ",")
	for _, m := range fam.Metric {
		var got []string
		for _, lp := range m.Label {
			got = append(got, lp.GetName()+"="+lp.GetValue())
		}
		if strings.Join(got, ",") == want {
			return m
		}
	}
	t.Fatalf("%s{%s}: no such sample", name, want)
	return nil
}

func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	m := sample(t, fams, name, labels...)
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("%s: neither counter nor gauge", name)
	return 0
}

// expect is one sample and its expected value and type.
type expect struct {
	name   string
	labels []string
	typ    dto.MetricType
	want   float64
}

func check(t *testing.T, fams map[string]*dto.MetricFamily, want []expect) {
	t.Helper()
	for _, e := range want {
		if typ := fams[e.name].GetType(); typ != e.typ {
			t.Errorf("%s: type %v, want %v", e.name, typ, e.typ)
		}
		if got := value(t, fams, e.name, e.labels...); got != e.want {
			t.Errorf("%s%v = %v, want %v", e.name, e.labels, got, e.want)
		}
	}
}

// expectations returns the samples f's stats give, with every counter
// derived from base.
func expectations(base float64) []expect {
	C, G := dto.MetricType_COUNTER, dto.MetricType_GAUGE
	return []expect{
		{"forecastd_messages_received_total", nil, C, base + 1},
		{"forecastd_parse_errors_total", []string{"reason=non_finite"}, C, base + 2},
		{"forecastd_parse_errors_total", []string{"reason=invalid_json"}, C, 0},
		{"forecastd_messages_refused_total", nil, C, base + 3},
		{"forecastd_messages_filtered_total", nil, C, base + 43},
		{"forecastd_messages_dropped_total", nil, C, base + 4},
		{"forecastd_messages_skipped_total", nil, C, base + 44},
		{"forecastd_consumer_resets_total", nil, C, base + 45},
		{"forecastd_input_connected", nil, G, 1},
		{"forecastd_series_active", nil, G, base + 5},
		{"forecastd_series_limit", nil, G, base + 49},
		{"forecastd_kernel_cache_bytes", nil, G, base + 91},
		{"forecastd_kernel_cache_limit_bytes", nil, G, base + 92},
		{"forecastd_kernel_cache_hits_total", nil, C, base + 93},
		{"forecastd_kernel_cache_misses_total", nil, C, base + 94},
		{"forecastd_series_created_total", nil, C, base + 6},
		{"forecastd_series_evicted_total", []string{"reason=idle"}, C, base + 7},
		{"forecastd_series_evicted_total", []string{"reason=max_series"}, C, base + 44},
		{"forecastd_series_evicted_unsaved_total", nil, C, base + 45},
		{"forecastd_points_processed_total", nil, C, base + 8},
		{"forecastd_forecasts_total", nil, C, base + 9},
		{"forecastd_points_dropped_total", []string{"reason=queue_full"}, C, base + 10},
		{"forecastd_points_dropped_total", []string{"reason=max_series"}, C, 0},
		{"forecastd_points_dropped_total", []string{"reason=shutdown"}, C, base + 12},
		{"forecastd_points_dropped_total", []string{"reason=closed"}, C, base + 13},
		{"forecastd_points_dropped_total", []string{"reason=out_of_order"}, C, base + 14},
		{"forecastd_points_dropped_total", []string{"reason=late"}, C, base + 90},
		{"forecastd_model_errors_total", []string{"model=aosvr", "reason=learn"}, C, base + 24},
		{"forecastd_model_errors_total", []string{"model=aosvr", "reason=predict"}, C, base + 25},
		{"forecastd_model_events_total", []string{"event=refusal", "model=aosvr"}, C, base + 26},
		{"forecastd_model_events_total", []string{"event=repair", "model=aosvr"}, C, base + 27},
		{"forecastd_model_events_total", []string{"event=refresh", "model=aosvr"}, C, base + 28},
		{"forecastd_model_events_total", []string{"event=rollback", "model=aosvr"}, C, base + 29},
		{"forecastd_model_events_total", []string{"event=rebuild", "model=aosvr"}, C, base + 30},
		{"forecastd_model_events_total", []string{"event=failure", "model=aosvr"}, C, base + 31},
		{"forecastd_model_max_drift", []string{"model=aosvr"}, G, base + 32},
		{"forecastd_model_errors_total", []string{"model=norma", "reason=learn"}, C, base + 33},
		{"forecastd_model_errors_total", []string{"model=norma", "reason=predict"}, C, 0},
		{"forecastd_checkpoint_writes_total", nil, C, base + 34},
		{"forecastd_checkpoint_deletes_total", nil, C, base + 35},
		{"forecastd_checkpoint_write_errors_total", nil, C, base + 36},
		{"forecastd_checkpoints_unwritten", nil, G, base + 37},
		{"forecastd_checkpoints_discarded_total", nil, C, base + 48},
		{"forecastd_partitions_held", nil, G, base + 46},
		{"forecastd_partition_leases_acquired_total", nil, C, base + 47},
	}
}

// setStats gives every field expectations reads a value derived from base.
func setStats(f *fake, base uint64) {
	f.src = sources.Stats{
		Received: base + 1, Refused: base + 3, Filtered: base + 43, Dropped: base + 4, Skipped: base + 44, Resets: base + 45, Connected: true,
		ParseErrors: map[sources.Reason]uint64{sources.ReasonNonFinite: base + 2},
	}
	f.run = runner.RunnerStats{
		SeriesActive: int64(base + 5), SeriesLimit: int64(base + 49), SeriesCreated: base + 6, SeriesEvicted: base + 7, EvictedLRU: base + 44, EvictedUnsaved: base + 45,
		Processed: base + 8, Forecasts: base + 9,
		DroppedQueueFull: base + 10, DroppedShutdown: base + 12,
		DroppedClosed: base + 13, OutOfOrder: base + 14, Late: base + 90,
		KernelCache: svr.ColumnCacheStats{Bytes: int64(base + 91), Limit: int64(base + 92), Hits: base + 93, Misses: base + 94},
		Models: []runner.ModelStats{
			{Kind: pipeline.AOSVR, LearnErrors: base + 24, PredictErrors: base + 25, Reports: true, Events: svr.AOSVRStats{
				Refused: base + 26, Repairs: base + 27, Refreshes: base + 28, Rollbacks: base + 29, Rebuilds: base + 30,
				Failures: base + 31, MaxDrift: float64(base + 32)}},
			{Kind: pipeline.NORMA, LearnErrors: base + 33},
		},
	}
	f.ckpt = telemetry.CheckpointStats{Written: base + 34, Deleted: base + 35, Errors: base + 36, Unwritten: int64(base + 37), Discarded: base + 48}
	f.parts = telemetry.PartitionStats{Held: int(base + 46), Acquired: base + 47}
}

func TestMetricsFollowGetters(t *testing.T) {
	t.Parallel()
	f := &fake{}
	setStats(f, 0)
	m := telemetry.New(f.config())
	base, c := serve(t, m.Handler())
	for _, b := range []uint64{0, 100, 1000} {
		f.set(func(f *fake) { setStats(f, b) })
		fams := scrape(t, c, base)
		check(t, fams, expectations(float64(b)))
		// Only the kinds whose models report the ladder have events.
		for _, s := range fams["forecastd_model_events_total"].GetMetric() {
			for _, l := range s.Label {
				if l.GetName() == "model" && l.GetValue() != "aosvr" {
					t.Errorf("model_events_total for model %q", l.GetValue())
				}
			}
		}
	}
}

func TestParseErrorsEveryReasonAtZero(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		st   sources.Stats
	}{
		{"nil map", sources.Stats{}},
		{"every reason", sources.Stats{ParseErrors: func() map[sources.Reason]uint64 {
			m := map[sources.Reason]uint64{}
			for _, r := range sources.Reasons() {
				m[r] = 0
			}
			return m
		}()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := telemetry.New(telemetry.Config{Collectors: []prometheus.Collector{sources.NewCollector(func() sources.Stats { return tc.st })}})
			base, c := serve(t, m.Handler())
			fams := scrape(t, c, base)
			reasons := sources.Reasons()
			if n := len(fams["forecastd_parse_errors_total"].GetMetric()); n != len(reasons) {
				t.Errorf("%d parse_errors_total samples, want %d", n, len(reasons))
			}
			for _, r := range reasons {
				if v := value(t, fams, "forecastd_parse_errors_total", "reason="+r.String()); v != 0 {
					t.Errorf("reason %s = %v, want 0", r, v)
				}
			}
			if v := value(t, fams, "forecastd_messages_received_total"); v != 0 {
				t.Errorf("messages_received_total = %v, want 0", v)
			}
		})
	}
}

func TestNilGettersLeaveMetricsOut(t *testing.T) {
	t.Parallel()
	f := &fake{}
	setStats(f, 0)
	cfg := f.config()
	cfg.Collectors = cfg.Collectors[1:] // no input
	m := telemetry.New(cfg)
	base, c := serve(t, m.Handler())
	fams := scrape(t, c, base)
	for _, name := range []string{"forecastd_messages_received_total", "forecastd_parse_errors_total"} {
		if _, ok := fams[name]; ok {
			t.Errorf("%s present", name)
		}
	}
	value(t, fams, "forecastd_series_active")
	// The Go and process collectors, and the histogram, are always there.
	for _, name := range []string{"go_goroutines", "forecastd_model_update_duration_seconds", "forecastd_build_info"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("%s missing", name)
		}
	}
	if runtime.GOOS == "linux" {
		if _, ok := fams["process_resident_memory_bytes"]; !ok {
			t.Error("process_resident_memory_bytes missing")
		}
	}
}

func TestBuildInfo(t *testing.T) {
	t.Parallel()
	m := telemetry.New(telemetry.Config{Version: "v1.2.3", Revision: "abc123"})
	base, c := serve(t, m.Handler())
	fams := scrape(t, c, base)
	if v := value(t, fams, "forecastd_build_info", "goversion="+runtime.Version(), "revision=abc123", "version=v1.2.3"); v != 1 {
		t.Errorf("build_info = %v, want 1", v)
	}
	// Without a version, the build's (or "unknown") is given.
	m = telemetry.New(telemetry.Config{})
	base, c = serve(t, m.Handler())
	fam := scrape(t, c, base)["forecastd_build_info"]
	if len(fam.GetMetric()) != 1 {
		t.Fatalf("%d build_info samples, want 1", len(fam.GetMetric()))
	}
	labels := map[string]string{}
	for _, l := range fam.Metric[0].Label {
		labels[l.GetName()] = l.GetValue()
	}
	if len(labels) != 3 || labels["goversion"] != runtime.Version() || labels["version"] == "" || labels["revision"] == "" {
		t.Errorf("build_info labels %v", labels)
	}
}

func TestReadiness(t *testing.T) {
	t.Parallel()
	var (
		mu     sync.Mutex
		ready  bool
		reason = "state not restored"
	)
	m := telemetry.New(telemetry.Config{Ready: func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return ready, reason
	}})
	base, c := serve(t, m.Handler())
	steps := []struct {
		ready  bool
		reason string
		code   int
		body   string
	}{
		{false, "state not restored", 503, "forecastd is not ready: state not restored\n"},
		{false, "nats input not connected", 503, "forecastd is not ready: nats input not connected\n"},
		{true, "", 200, "forecastd is ready.\n"},
		{false, "", 503, "forecastd is not ready: not ready\n"},
		{false, "shutting down", 503, "forecastd is not ready: shutting down\n"},
	}
	for _, s := range steps {
		mu.Lock()
		ready, reason = s.ready, s.reason
		mu.Unlock()
		code, body := get(t, c, base+"/-/ready")
		if code != s.code || body != s.body {
			t.Errorf("ready=%v reason=%q: %d %q, want %d %q", s.ready, s.reason, code, body, s.code, s.body)
		}
		// Healthy whatever the readiness.
		if code, body := get(t, c, base+"/-/healthy"); code != 200 || body != "forecastd is healthy.\n" {
			t.Errorf("/-/healthy: %d %q", code, body)
		}
	}
	// Without Ready, ready whenever serving.
	base, c = serve(t, telemetry.New(telemetry.Config{}).Handler())
	if code, _ := get(t, c, base+"/-/ready"); code != 200 {
		t.Errorf("nil Ready: /-/ready %d, want 200", code)
	}
	if resp, err := c.Post(base+"/-/ready", "text/plain", nil); err != nil {
		t.Error(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST /-/ready: %s", resp.Status)
		}
	}
}

func TestObservers(t *testing.T) {
	t.Parallel()
	m := telemetry.New(telemetry.Config{})
	for _, d := range []time.Duration{800 * time.Nanosecond, 3 * time.Microsecond, 30 * time.Millisecond, time.Second} {
		m.ObserveUpdate(d)
	}
	base, c := serve(t, m.Handler())
	fams := scrape(t, c, base)

	h := sample(t, fams, "forecastd_model_update_duration_seconds").GetHistogram()
	if h.GetSampleCount() != 4 || math.Abs(h.GetSampleSum()-1.0300038) > 1e-12 {
		t.Errorf("update: count %d sum %v, want 4 and 1.0300038", h.GetSampleCount(), h.GetSampleSum())
	}
	cum := map[float64]uint64{1e-6: 1, 2.5e-6: 1, 5e-6: 2, 2.5e-2: 2, 5e-2: 3, 0.1: 3}
	checkBuckets(t, "update", h, telemetry.UpdateBuckets, cum)

}

// checkBuckets checks h has exactly the bounds want, and the cumulative
// counts cum at the bounds cum names.
func checkBuckets(t *testing.T, name string, h *dto.Histogram, bounds []float64, cum map[float64]uint64) {
	t.Helper()
	var got []float64
	for _, b := range h.Bucket {
		if math.IsInf(b.GetUpperBound(), 1) {
			continue
		}
		got = append(got, b.GetUpperBound())
		if n, ok := cum[b.GetUpperBound()]; ok && b.GetCumulativeCount() != n {
			t.Errorf("%s: bucket le=%g has %d, want %d", name, b.GetUpperBound(), b.GetCumulativeCount(), n)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(bounds) {
		t.Errorf("%s: buckets %v, want %v", name, got, bounds)
	}
}

func TestUpdateBucketsSpan(t *testing.T) {
	b := telemetry.UpdateBuckets
	if b[0] != 1e-6 || b[len(b)-1] != 0.1 {
		t.Errorf("update buckets from %g to %g, want 1µs to 100ms", b[0], b[len(b)-1])
	}
}

func TestObserversDoNotAllocate(t *testing.T) {
	m := telemetry.New(telemetry.Config{})
	if n := testing.AllocsPerRun(1000, func() {
		m.ObserveUpdate(17 * time.Microsecond)
	}); n != 0 {
		t.Errorf("%v allocations per observation, want 0", n)
	}
}

func TestLint(t *testing.T) {
	t.Parallel()
	f := &fake{}
	setStats(f, 1)
	m := telemetry.New(f.config())
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "forecastd_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
	// Every name of ours carries the prefix.
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range fams {
		n := fam.GetName()
		if !strings.HasPrefix(n, "forecastd_") && !strings.HasPrefix(n, "go_") && !strings.HasPrefix(n, "process_") {
			t.Errorf("metric %s lacks the forecastd_ prefix", n)
		}
	}
}

// TestScrapeWhileObserving scrapes while observers and getters run on
// other goroutines; it is meant for -race.
func TestScrapeWhileObserving(t *testing.T) {
	t.Parallel()
	f := &fake{}
	m := telemetry.New(f.config())
	base, c := serve(t, m.Handler())
	var (
		stop atomic.Bool
		wg   sync.WaitGroup
		n    atomic.Uint64
	)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				m.ObserveUpdate(time.Duration(i+1) * time.Microsecond)
				f.set(func(f *fake) { f.run.Processed++ })
				n.Add(1)
			}
		}()
	}
	var last float64
	for range 20 {
		fams := scrape(t, c, base)
		v := value(t, fams, "forecastd_points_processed_total")
		if v < last {
			t.Errorf("points_processed_total went down: %v after %v", v, last)
		}
		last = v
	}
	stop.Store(true)
	wg.Wait()
	h := sample(t, scrape(t, c, base), "forecastd_model_update_duration_seconds").GetHistogram()
	if h.GetSampleCount() != n.Load() {
		t.Errorf("update count %d, want %d", h.GetSampleCount(), n.Load())
	}
}

// The components' own collectors are served beside the getters' metrics,
// and a component's descriptor that clashes with another is refused at
// New, not at a scrape.
func TestCollectorsServed(t *testing.T) {
	t.Parallel()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "forecastd_widgets_total", Help: "Widgets."}, []string{"sink"})
	c.WithLabelValues("toy").Add(3)
	m := telemetry.New(telemetry.Config{Collectors: []prometheus.Collector{c}})
	base, cl := serve(t, m.Handler())
	if v := value(t, scrape(t, cl, base), "forecastd_widgets_total", "sink=toy"); v != 3 {
		t.Errorf("forecastd_widgets_total{sink=toy} = %v, want 3", v)
	}
	clash := prometheus.NewCounter(prometheus.CounterOpts{Name: "forecastd_widgets_total", Help: "Other widgets."})
	defer func() {
		if recover() == nil {
			t.Error("New took two collectors of one name with different help")
		}
	}()
	telemetry.New(telemetry.Config{Collectors: []prometheus.Collector{c, clash}})
}
