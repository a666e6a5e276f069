package sinks

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/forecastd/forecastd/internal/config/schema"
	"github.com/forecastd/forecastd/pipeline"
)

// rwSeries is a decoded TimeSeries of a WriteRequest.
type rwSeries struct {
	labels  [][2]string
	samples []promSample
}

// decodeWriteRequest decodes a snappy-compressed remote write 1.0
// WriteRequest, the test's own reading of prompb's types.proto.
func decodeWriteRequest(t testing.TB, body []byte) []rwSeries {
	t.Helper()
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		t.Fatalf("snappy: %v", err)
	}
	var out []rwSeries
	each(t, raw, func(num protowire.Number, v []byte, _ uint64) {
		if num != 1 {
			t.Fatalf("WriteRequest field %d", num)
		}
		var s rwSeries
		each(t, v, func(num protowire.Number, v []byte, _ uint64) {
			switch num {
			case 1:
				var l [2]string
				each(t, v, func(num protowire.Number, v []byte, _ uint64) { l[num-1] = string(v) })
				s.labels = append(s.labels, l)
			case 2:
				var p promSample
				each(t, v, func(num protowire.Number, v []byte, x uint64) {
					if num == 1 {
						p.v = math.Float64frombits(x)
					} else {
						p.t = int64(x)
					}
				})
				s.samples = append(s.samples, p)
			}
		})
		out = append(out, s)
	})
	return out
}

// each calls fn with each field of the message b: its bytes, or its
// number for a varint or fixed64.
func each(t testing.TB, b []byte, fn func(protowire.Number, []byte, uint64)) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatal(protowire.ParseError(n))
		}
		b = b[n:]
		switch typ {
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				t.Fatal(protowire.ParseError(n))
			}
			fn(num, v, 0)
			b = b[n:]
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			fn(num, nil, v)
			b = b[n:]
		case protowire.Fixed64Type:
			v, n := protowire.ConsumeFixed64(b)
			fn(num, nil, v)
			b = b[n:]
		default:
			t.Fatalf("wire type %d", typ)
		}
	}
}

// TestPromEncode: labels sorted and sanitized, reserved and colliding
// tags renamed or left out, label count and length bounded, samples of
// a series in time order with one value per time.
func TestPromEncode(t *testing.T) {
	e := newPromEncoder(8, 8)
	t0 := time.UnixMilli(1_700_000_000_000)
	tags := []Tag{{Key: "9lives", Value: "x"}, {Key: "a-b", Value: "long value here"}, {Key: "a_b", Value: "dup"},
		{Key: "model", Value: "m"}, {Key: "z", Value: "bad\xffutf8"}, {Key: "zz", Value: "over the bound"}}
	for _, at := range []time.Time{t0.Add(2 * time.Minute), t0, t0.Add(time.Minute), t0} {
		f := pipeline.Forecast{Time: at, Value: float64(at.Minute()), Lower: math.NaN(), Upper: math.NaN()}
		if !e.add(&Record{Kind: KindForecast, Series: "s", Model: "aosvr", Tags: tags, Forecast: f}) {
			t.Fatal("add: no sample")
		}
	}
	if e.add(&Record{Kind: KindForecast, Series: "s", Forecast: pipeline.Forecast{Value: math.NaN(), Lower: math.NaN()}}) {
		t.Fatal("a record of NaN: added")
	}
	got := decodeWriteRequest(t, e.encode())
	if len(got) != 1 {
		t.Fatalf("%d series", len(got))
	}
	want := [][2]string{{"_9lives", "x"}, {"__name__", PromForecast}, {"a_b", "long val"}, {"model", "aosvr"},
		{"series_key", "s"}, {"tag_model", "m"}, {"z", "bad\uFFFDut"}}
	if !equalLabels(got[0].labels, want) {
		t.Fatalf("labels %q, want %q", got[0].labels, want)
	}
	s := got[0].samples
	if len(s) != 3 || s[0].t != t0.UnixMilli() || s[1].t != t0.Add(time.Minute).UnixMilli() || s[2].t != t0.Add(2*time.Minute).UnixMilli() {
		t.Fatalf("samples %v", s)
	}
	if again := decodeWriteRequest(t, e.encode()); len(again) != 0 {
		t.Fatalf("encode did not empty the batch: %v", again)
	}
}

func equalLabels(a, b [][2]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPromRetry: a 503 and a 429 are retried, the batch then written
// once; a 400 is counted as rejected, not retried; the headers are the
// protocol's.
func TestPromRetry(t *testing.T) {
	var calls atomic.Int32
	var mu sync.Mutex
	var series int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if r.Header.Get("Content-Encoding") != "snappy" || r.Header.Get("X-Prometheus-Remote-Write-Version") != "0.1.0" ||
			r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("headers %v", r.Header)
		}
		body, _ := io.ReadAll(r.Body)
		switch n {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		case 3:
			mu.Lock()
			series += len(decodeWriteRequest(t, body))
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		default:
			http.Error(w, "out of bounds", http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	s, err := NewProm(PromConfig{URL: srv.URL + "/api/v1/write", FlushInterval: schema.Dur(time.Hour),
		RetryInterval: time.Millisecond, MaxRetryInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	recs, _ := promBatch(3, 1, time.UnixMilli(1_700_000_000_000))
	for _, r := range recs {
		s.Write(r)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Written != uint64(len(recs)+3) || st.WriteErrors != 2 || st.Rejected != 0 { // + series 0's path and threshold
		t.Fatalf("after retries: %+v, %d records", st, len(recs))
	}
	s.Write(recs[0])
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Rejected != 4 || st.WriteErrors != 3 || calls.Load() != 4 {
		t.Fatalf("after a 400: %+v, %d calls", st, calls.Load())
	}
	if series == 0 {
		t.Fatal("no series written")
	}
	if err := s.Write(recs[0]); err != ErrClosed {
		t.Fatalf("Write after Close: %v", err)
	}
}

// TestPromOverflow: with no receiver, the oldest records beyond the
// buffer are dropped and counted, and Close reports what was left.
func TestPromOverflow(t *testing.T) {
	s, err := NewProm(PromConfig{URL: "http://127.0.0.1:1/api/v1/write", MetricBufferLimit: 10, MetricBatchSize: 100,
		FlushInterval: schema.Dur(time.Hour), RetryInterval: time.Millisecond, MaxRetryInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := promBatch(1, 15, time.UnixMilli(1_700_000_000_000)) // series 0: a path of 3 a forecast
	for _, r := range recs {
		s.Write(r)
	}
	st := s.Stats()
	total := uint64(15 * (3 + 1 + 1)) // path steps, threshold, outcome
	if st.Dropped != total-10 || st.Buffered != 10 {
		t.Fatalf("%+v, %d records", st, total)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Close(ctx); err == nil || !strings.Contains(err.Error(), "10 records not written") {
		t.Fatalf("Close: %v", err)
	}
	if st := s.Stats(); st.Dropped != total || st.Buffered != 0 {
		t.Fatalf("after Close: %+v", st)
	}
}

// TestPromConfigValidate names every bad key at once.
func TestPromConfigValidate(t *testing.T) {
	c := PromConfig{URL: "ftp://x", Username: "u", BearerToken: "t", MetricBatchSize: -1, MaxLabels: 3, MaxLabelLength: 1 << 20}
	err := c.Validate()
	for _, key := range []string{"url:", "bearer_token:", "metric_batch_size:", "max_labels:", "max_label_length:"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("Validate: %v; want %s", err, key)
		}
	}
	if err := (&PromConfig{URL: "http://127.0.0.1:9090/api/v1/write"}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestPromEncodeAtOrigin: with Timestamp "origin" a forecast's samples,
// each step of its path, are at its origin, told apart by horizon; its
// outcome's actual stays at the time of the point.
func TestPromEncodeAtOrigin(t *testing.T) {
	e := newPromEncoder(DefaultPromMaxLabels, DefaultPromMaxLabelLength)
	e.atOrigin = true
	t0 := time.UnixMilli(1_700_000_000_000)
	recs, _ := promBatch(1, 1, t0) // series 0: a path of 3
	for _, r := range recs {
		r.steps(func(q Record) { e.add(&q) })
	}
	got := decodeWriteRequest(t, e.encode())
	horizons := 0
	for _, s := range got {
		name, horizon := "", ""
		for _, l := range s.labels {
			switch l[0] {
			case "__name__":
				name = l[1]
			case "horizon":
				horizon = l[1]
			}
		}
		want := recs[0].Forecast.Origin.UnixMilli()
		if name == PromActual {
			want = t0.UnixMilli()
		}
		if horizon != "" {
			horizons++
		}
		if len(s.samples) != 1 || s.samples[0].t != want {
			t.Errorf("%s horizon %q: %v, want at %d", name, horizon, s.samples, want)
		}
	}
	if horizons != 3 {
		t.Fatalf("%d steps", horizons)
	}
}
