package sinks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/forecastd/forecastd/internal/config/schema"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/forecastd/forecastd/pipeline"
)

// fluxRow is one field value of one point, as a Flux table row has it.
type fluxRow struct {
	Time  time.Time
	Field string
	Value float64 // NaN for a string field
	Str   string  // a string field's value
	Tags  map[string]string
}

// queryAll returns every field value of measurement in the test's
// database, in a day around t0: one row per field of a point, with the
// point's tags, as Flux would return them. It reads with InfluxQL: a
// Flux-enabled influxd takes tens of seconds of CPU to start.
func queryAll(t *testing.T, srv *influxtest.Server, measurement string) []fluxRow {
	t.Helper()
	body := srv.Query(t, fmt.Sprintf(`SELECT * FROM %q WHERE time >= '2024-05-01T00:00:00Z' AND time < '2024-05-02T00:00:00Z' GROUP BY *`, measurement))
	var res struct {
		Results []struct {
			Series []struct {
				Tags    map[string]string
				Columns []string
				Values  [][]any
			}
		}
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&res); err != nil || len(res.Results) != 1 {
		t.Fatalf("query: %v\n%s", err, body)
	}
	var rows []fluxRow
	for _, ser := range res.Results[0].Series {
		tags := map[string]string{}
		for k, v := range ser.Tags {
			if v != "" { // GROUP BY * names every tag key, "" where absent
				tags[k] = v
			}
		}
		for _, vals := range ser.Values {
			tm, err := time.Parse(time.RFC3339Nano, vals[0].(string))
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range vals[1:] {
				row := fluxRow{Time: tm, Field: ser.Columns[i+1], Value: math.NaN(), Tags: tags}
				switch v := v.(type) {
				case nil:
					continue // the point has no such field
				case json.Number:
					if row.Value, err = v.Float64(); err != nil {
						t.Fatal(err)
					}
				case string:
					row.Str = v
				default:
					t.Fatalf("field %s is %T", row.Field, v)
				}
				rows = append(rows, row)
			}
		}
	}
	return rows
}

// outcomeRec is the outcome of f: the actual value y, arriving at a time
// 1 s after the forecast's target (the point is still the forecast's).
func outcomeRec(f Record, y float64) Record {
	o := pipeline.Outcome{Forecast: f.Forecast, Time: f.Forecast.Time.Add(time.Second), Actual: y}
	o.Anomaly.Score = anomaly.Score(y, f.Forecast.Value, f.Forecast.Lower, f.Forecast.Upper)
	return Record{Kind: KindOutcome, Series: f.Series, Model: f.Model, Subject: f.Subject, Tags: f.Tags, Outcome: o}
}

func newInflux(t *testing.T, cfg InfluxConfig) *Influx {
	t.Helper()
	s, err := NewInflux(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(ctxTimeout(t, 5*time.Second)) })
	return s
}

func TestInfluxWriteAndQuery(t *testing.T) {
	t.Parallel()
	srv := influxtest.Shared(t, influxtest.Options{Auth: true})
	s := newInflux(t, InfluxConfig{
		URL: srv.URL, Token: srv.Token, Organization: "ignored", Bucket: srv.Bucket,
		MetricBatchSize: 4, FlushInterval: schema.Dur(50 * time.Millisecond),
	})
	tags := []Tag{{Key: "cpu", Value: "cpu0"}, {Key: "host", Value: "a b,c"}, {Key: "model", Value: "xeon"}}
	var recs []Record
	for i := range 6 {
		a := forecastRec("cpu,cpu=cpu0,host=a b\\,c usage", "telegraf.cpu", i, i%2 == 1)
		a.Tags = tags
		b := forecastRec("temp", "sensors.temp", i, true)
		b.Model = "norma"
		recs = append(recs, a, b)
		if i < 4 {
			ob := outcomeRec(b, b.Forecast.Value-2)
			if i >= 1 {
				ob.Outcome.Anomaly.Event = anomaly.Opened // written as anomaly = 1
				ob.Outcome.Anomaly.Extreme = i == 3       // anomaly_reason "extreme",
				ob.Outcome.Anomaly.Seasonal = i == 1      // "seasonal", else "deviation"
			}
			recs = append(recs, outcomeRec(a, a.Forecast.Value+0.5), ob)
		}
	}
	for _, r := range recs {
		if err := s.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Written != uint64(len(recs)) || st.Dropped+st.Rejected+st.Invalid+st.WriteErrors != 0 || st.Buffered != 0 {
		t.Fatalf("stats %+v, want %d written and nothing else", st, len(recs))
	}

	// Expected: one point per series and target time, its fields.
	type key struct {
		series string
		time   time.Time
		field  string
	}
	want := map[key]float64{}
	scored := 0 // outcomes with an interval, so an anomaly_score
	opened := 0 // outcomes that opened an anomaly event
	wantReason := map[key]string{}
	wantTags := map[string]map[string]string{}
	for _, r := range recs {
		tg := map[string]string{TagSeries: r.Series, "model": r.Model}
		for _, x := range r.Tags {
			tg[inputTagKey(x.Key, r.Tags)] = x.Value // model: tag_model
		}
		wantTags[r.Series] = tg
		switch r.Kind {
		case KindForecast:
			f := r.Forecast
			want[key{r.Series, f.Time, "yhat"}] = f.Value
			if f.HasInterval() {
				want[key{r.Series, f.Time, "yhat_lower"}] = f.Lower
				want[key{r.Series, f.Time, "yhat_upper"}] = f.Upper
			}
		case KindOutcome:
			o := r.Outcome
			want[key{r.Series, o.Forecast.Time, "y"}] = o.Actual
			want[key{r.Series, o.Forecast.Time, "error"}] = o.Actual - o.Forecast.Value
			if !math.IsNaN(o.Anomaly.Score) {
				want[key{r.Series, o.Forecast.Time, "anomaly_score"}] = o.Anomaly.Score
				scored++
			}
			if o.Anomaly.Event == anomaly.Opened {
				want[key{r.Series, o.Forecast.Time, "anomaly"}] = 1
				reason := "deviation"
				if o.Anomaly.Extreme {
					reason = "extreme"
				} else if o.Anomaly.Seasonal {
					reason = "seasonal"
				}
				wantReason[key{r.Series, o.Forecast.Time, "anomaly_reason"}] = reason
				opened++
			}
		}
	}
	rows := queryAll(t, srv, "forecast")
	got := map[key]float64{}
	gotReason := map[key]string{}
	for _, r := range rows {
		k := key{r.Tags[TagSeries], r.Time, r.Field}
		if r.Field == "anomaly_reason" {
			gotReason[k] = r.Str
			continue
		}
		if _, dup := got[k]; dup {
			t.Errorf("duplicate %v", k)
		}
		got[k] = r.Value
		if w := wantTags[k.series]; fmt.Sprint(w) != fmt.Sprint(r.Tags) {
			t.Errorf("%v: tags %v, want %v", k, r.Tags, w)
		}
	}
	for k, v := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("missing %v", k)
		} else if math.Abs(g-v) > 1e-12 {
			t.Errorf("%v = %v, want %v", k, g, v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected %v = %v", k, got[k])
		}
	}
	if fmt.Sprint(gotReason) != fmt.Sprint(wantReason) {
		t.Errorf("anomaly_reason %v, want %v", gotReason, wantReason)
	}
	if len(want) != 6*2+3*2+6*2+4*2*2+scored+opened || scored == 0 || opened != 3 {
		t.Errorf("test expects %d values", len(want))
	}
}

// fieldTimes returns the times of the yhat values of series, sorted.
func yhatIndexes(t *testing.T, srv *influxtest.Server) []int {
	t.Helper()
	var idx []int
	for _, r := range queryAll(t, srv, "forecast") {
		if r.Field == "yhat" {
			idx = append(idx, int(r.Time.Sub(t0)/(10*time.Second))-1)
		}
	}
	sort.Ints(idx)
	return idx
}

// InfluxDB stopped mid-run and restarted on the same port and data: the
// batch in flight is retried, the buffer overflows by exactly what is
// counted, and everything kept arrives after recovery.
func TestInfluxOutage(t *testing.T) {
	t.Parallel()
	srv := influxtest.Start(t, influxtest.Options{}) // stopped and restarted: its own
	const batch, limit = 5, 20
	s := newInflux(t, InfluxConfig{
		URL: srv.URL, Bucket: srv.Bucket,
		MetricBatchSize: batch, MetricBufferLimit: limit,
		FlushInterval: schema.Dur(time.Hour), // only full batches and Close write
		RetryInterval: 10 * time.Millisecond, MaxRetryInterval: 50 * time.Millisecond,
	})
	write := func(from, to int) {
		for i := from; i < to; i++ {
			if err := s.Write(forecastRec("cpu", "in", i, true)); err != nil {
				t.Fatal(err)
			}
		}
	}
	stats := func(what string, cond func(InfluxStats) bool) InfluxStats {
		t.Helper()
		var st InfluxStats
		waitFor(t, 20*time.Second, what, func() bool { st = s.Stats(); return cond(st) })
		return st
	}

	write(0, 5)
	stats("the first batch written", func(st InfluxStats) bool { return st.Written == 5 })

	srv.Stop()
	write(5, 10) // a full batch: taken in flight, and retried
	stats("the batch to fail", func(st InfluxStats) bool { return st.WriteErrors >= 1 })
	write(10, 60) // 50 more into a buffer of 20: the oldest 30 dropped
	st := s.Stats()
	if st.Dropped != 30 || st.Buffered != batch+limit || st.Written != 5 {
		t.Fatalf("during the outage: %+v, want 30 dropped, %d buffered, 5 written", st, batch+limit)
	}
	stats("retries", func(st InfluxStats) bool { return st.WriteErrors >= 3 })

	srv.Restart()
	st = stats("the buffer to drain", func(st InfluxStats) bool { return st.Buffered == 0 })
	if st.Written != 5+5+limit || st.Dropped != 30 || st.Rejected != 0 {
		t.Fatalf("after recovery: %+v, want %d written, 30 dropped", st, 5+5+limit)
	}
	write(60, 63) // after recovery, a partial batch written by Close
	if err := s.Close(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	st = s.Stats()
	t.Logf("final: %+v", st)
	if st.Written != 33 || st.Dropped != 30 || st.Buffered != 0 {
		t.Fatalf("final: %+v, want 33 written, 30 dropped", st)
	}
	var want []int
	for i := range 63 {
		if i < 10 || i >= 40 {
			want = append(want, i)
		}
	}
	if got := yhatIndexes(t, srv); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("forecasts in InfluxDB: %v\nwant %v (10..39 dropped)", got, want)
	}
}

// Writes InfluxDB refuses for good are counted, as errors and rejected
// records, and not retried. (A database not found is retried:
// TestInfluxDatabaseNotFoundKept.)
func TestInfluxWriteRefused(t *testing.T) {
	t.Parallel()
	srv := influxtest.Shared(t, influxtest.Options{Auth: true})
	for _, tc := range []struct {
		name, token, bucket string
	}{
		{"bad password", "admin:wrong", srv.Bucket},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newInflux(t, InfluxConfig{URL: srv.URL, Token: tc.token, Bucket: tc.bucket,
				MetricBatchSize: 4, RetryInterval: time.Millisecond, Timeout: schema.Dur(2 * time.Second)})
			for i := range 10 {
				if err := s.Write(forecastRec("cpu", "in", i, false)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(ctxTimeout(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
			// 10 records: batches of 4, 4 and 2, each refused once.
			if st := s.Stats(); st.WriteErrors != 3 || st.Rejected != 10 || st.Written != 0 || st.Buffered != 0 {
				t.Fatalf("stats %+v, want 3 write errors and 10 rejected", st)
			}
		})
	}
}

// With a server that answers 503 to every write, Close retries until its
// deadline, counts what it could not write as dropped, and returns after
// its goroutine has exited (goleak checks the goroutine).
func TestInfluxCloseDeadline(t *testing.T) {
	t.Parallel()
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.Error(w, `{"error":"busy"}`, http.StatusServiceUnavailable)
	}))
	defer busy.Close()
	s, err := NewInflux(InfluxConfig{URL: busy.URL, Bucket: "db/rp",
		MetricBatchSize: 3, RetryInterval: 5 * time.Millisecond, MaxRetryInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		if err := s.Write(forecastRec("cpu", "in", i, true)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "write errors", func() bool { return s.Stats().WriteErrors >= 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = s.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "7 records not written") {
		t.Fatalf("Close: %v, want deadline exceeded with 7 records not written", err)
	}
	if st := s.Stats(); st.Dropped != 7 || st.Buffered != 0 || st.Written != 0 {
		t.Fatalf("stats %+v, want 7 dropped", st)
	}
	if err := s.Write(forecastRec("cpu", "in", 9, true)); err != ErrClosed {
		t.Errorf("Write after Close: %v", err)
	}
}

func TestInfluxConfigValidate(t *testing.T) {
	err := (&InfluxConfig{MetricBatchSize: -1, FlushInterval: schema.Dur(-time.Second)}).Validate()
	for _, want := range []string{"url: required", "bucket: required", "metric_batch_size: negative", "flush_interval: must be positive"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want it to contain %q", err, want)
		}
	}
	if _, err := NewInflux(InfluxConfig{URL: "http://x"}); err == nil {
		t.Error("NewInflux without a bucket succeeded")
	}
}

func TestInfluxSkipsNonFinite(t *testing.T) {
	e := &lineEncoder{measurement: "m", names: currentTags}
	r := forecastRec("cpu", "in", 0, true)
	r.Forecast.Value, r.Forecast.Upper = math.NaN(), math.Inf(1)
	b, ok := e.line(nil, &r)
	if !ok {
		t.Fatal("point with a finite lower bound dropped")
	}
	if want := "m,model=aosvr,series_key=cpu yhat_lower=-0.75 "; !strings.HasPrefix(string(b), want) {
		t.Errorf("line %q, want it to start %q", b, want)
	}
	r.Forecast.Lower = math.NaN()
	if b, ok := e.line(nil, &r); ok {
		t.Errorf("point with no finite field kept: %q", b)
	}
}

// Flush writes what waits, before the flush interval and below a batch,
// and returns once InfluxDB has it; after Close it says so.
func TestInfluxFlush(t *testing.T) {
	t.Parallel()
	srv := influxtest.Shared(t, influxtest.Options{})
	s := newInflux(t, InfluxConfig{URL: srv.URL, Bucket: srv.Bucket, MetricBatchSize: 100, FlushInterval: schema.Dur(time.Hour)})
	for i := range 3 {
		if err := s.Write(forecastRec("flush", "in", i, true)); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Written != 0 || st.Buffered != 3 {
		t.Fatalf("before Flush: %+v, want 3 buffered", st)
	}
	if err := s.Flush(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Written != 3 || st.Buffered != 0 {
		t.Fatalf("after Flush: %+v, want 3 written", st)
	}
	if err := s.Close(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctxTimeout(t, 10*time.Second)); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush after Close: %v, want ErrClosed", err)
	}
}

// Writers of many series at once lose nothing and count everything: every
// record written is, after Close, written or dropped, whichever lane it
// went through (run it with -race).
func TestInfluxConcurrentWriters(t *testing.T) {
	t.Parallel()
	srv := influxtest.Shared(t, influxtest.Options{})
	s := newInflux(t, InfluxConfig{URL: srv.URL, Bucket: srv.Bucket, MetricBatchSize: 50, MetricBufferLimit: 120, FlushInterval: schema.Dur(20 * time.Millisecond)})
	const writers, each = 4, 300
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := s.Write(forecastRec(fmt.Sprintf("w%d-%d", w, i%7), "in", i, true)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := s.Close(ctxTimeout(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Written+st.Dropped != writers*each || st.Buffered != 0 || st.Rejected+st.Invalid != 0 {
		t.Fatalf("stats %+v: written + dropped, want %d", st, writers*each)
	}
}

// TestInfluxCloseUnreachable: with no server at the url, Close tries once
// more at once and gives up without waiting out its deadline or the
// back-off: it says how many records were not written and that InfluxDB
// did not answer, and logs it so, not as a full buffer. (Before, a Ctrl-C
// waited 28 s, then said the buffer of 10 000 was full when it held 29.)
func TestInfluxCloseUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	var logs syncBuffer
	s, err := NewInflux(InfluxConfig{URL: url, Bucket: "db", FlushInterval: schema.Dur(time.Millisecond),
		RetryInterval: time.Minute, MaxRetryInterval: time.Minute, // a Close waits on no back-off
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 29 {
		if err := s.Write(forecastRec("cpu", "in", i, true)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "a failed write", func() bool { return s.Stats().WriteErrors >= 1 })
	err = s.Close(ctxTimeout(t, 10*time.Minute)) // a bound for a hang only
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "29 records not written") ||
		!strings.Contains(err.Error(), "does not answer") {
		t.Fatalf("Close: %v, want 29 records not written as InfluxDB does not answer, before the deadline", err)
	}
	if st := s.Stats(); st.Dropped != 29 || st.Buffered != 0 {
		t.Fatalf("stats %+v, want 29 dropped", st)
	}
	if out := logs.String(); strings.Contains(out, "buffer full") || !strings.Contains(out, "shutdown: records not written") {
		t.Fatalf("the log says:\n%s", out)
	}
}

// keepBody is a RoundTripper that answers the first write at once with a
// 400, its body unread, as net/http may (it may read a request's body
// after the call returned: at a timeout, or after an early answer); at
// the second write it reads the first's body, and then answers 204.
type keepBody struct {
	first      io.ReadCloser
	snapshot   string // the first body, read through GetBody at once
	firstLater string // the first body, read at the second write
	calls      int
}

func (k *keepBody) RoundTrip(req *http.Request) (*http.Response, error) {
	k.calls++
	switch k.calls {
	case 1:
		k.first = req.Body
		b, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		snap, _ := io.ReadAll(b)
		k.snapshot = string(snap)
		return &http.Response{StatusCode: 400, Status: "400 Bad Request", Header: http.Header{},
			Body: io.NopCloser(strings.NewReader(`{"error":"refused"}`)), Request: req}, nil
	case 2:
		later, _ := io.ReadAll(k.first)
		k.first.Close()
		k.firstLater = string(later)
	}
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{StatusCode: 204, Status: "204 No Content", Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// TestInfluxBodyOwnsItsBytes: a write's request body is the batch's own
// bytes, whoever reads it when: the next batch, encoded in the buffer the
// sink reuses, does not change it.
func TestInfluxBodyOwnsItsBytes(t *testing.T) {
	t.Parallel()
	k := &keepBody{}
	s := newInflux(t, InfluxConfig{URL: "http://127.0.0.1:1", Bucket: "db", MetricBatchSize: 3, FlushInterval: schema.Dur(time.Hour), transport: k})
	for i := range 6 { // two batches
		if err := s.Write(forecastRec("cpu", "in", i, true)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(ctxTimeout(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	if k.calls < 2 || k.snapshot == "" {
		t.Fatalf("%d writes, first body %q", k.calls, k.snapshot)
	}
	if k.firstLater != k.snapshot {
		t.Fatalf("the first write's body changed after the call:\nsent  %q\nlater %q", k.snapshot, k.firstLater)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
