package promql

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/forecastd/forecastd/internal/config/schema"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/sources"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeProm answers /api/v1/query_range with n series, value t·1000+i at
// each step from start to end; every fail-th request fails with a 503.
type fakeProm struct {
	n, fail  int
	label    string // a label of every series
	requests atomic.Int64
}

func (f *fakeProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k := f.requests.Add(1)
	if f.fail > 0 && k%int64(f.fail) == 0 {
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	ms := func(k string) int64 { v, _ := strconv.ParseFloat(r.FormValue(k), 64); return int64(v*1000 + 0.5) }
	start, end, step := ms("start"), ms("end"), ms("step")
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for i := range f.n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"metric":{"__name__":"m","i":"%d","x":%q},"values":[`, i, f.label)
		for t := start; t <= end; t += step {
			if t > start {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `[%.3f,"%d"]`, float64(t)/1000, t+int64(i))
		}
		b.WriteString("]}")
	}
	b.WriteString("]}}")
	w.Write([]byte(b.String()))
}

// recorder keeps what a Source delivers, by key.
type recorder struct {
	mu   sync.Mutex
	pts  map[string][]sources.KeyedPoint
	msgs int
}

func (r *recorder) deliver(_ context.Context, m *sources.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pts == nil {
		r.pts = map[string][]sources.KeyedPoint{}
	}
	r.msgs++
	for _, p := range m.Points {
		r.pts[p.Key] = append(r.pts[p.Key], p)
		m.Done(nil)
	}
}

func (r *recorder) snapshot() map[string][]sources.KeyedPoint {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]sources.KeyedPoint{}
	for k, v := range r.pts {
		out[k] = append([]sources.KeyedPoint(nil), v...)
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func start(t *testing.T, cfg Config, rec *recorder) *Source {
	t.Helper()
	s, err := New(cfg, Options{Deliver: rec.deliver})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() {
		if err := s.StopIntake(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return s
}

// TestContiguous: across evaluations, some failing, every series gets
// every step once, in order, with no gap and no duplicate.
func TestContiguous(t *testing.T) {
	for _, fail := range []int{0, 3} {
		t.Run(fmt.Sprintf("fail=%d", fail), func(t *testing.T) {
			f := &fakeProm{n: 3, fail: fail}
			srv := httptest.NewServer(f)
			defer srv.Close()
			rec := &recorder{}
			step := 50 * time.Millisecond
			s := start(t, Config{URL: srv.URL, Queries: []string{"m"}, Step: schema.Dur(step), Lag: schema.Dur(0),
				Lookback: schema.Dur(time.Second)}, rec)
			waitFor(t, "10 evaluations", func() bool { return f.requests.Load() >= 10 })
			if err := s.StopIntake(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := rec.snapshot()
			if len(got) != 3 {
				t.Fatalf("%d series, want 3: %v", len(got), got)
			}
			for i := range 3 {
				key := fmt.Sprintf(`m{i="%d",x=""}`, i)
				pts := got[key]
				if len(pts) < 21 { // the lookback's 21 steps at least
					t.Fatalf("%s: %d points", key, len(pts))
				}
				for j, p := range pts {
					if want := float64(p.Time.UnixMilli()) + float64(i); p.Value != want {
						t.Fatalf("%s point %d: %v at %v, want %v", key, j, p.Value, p.Time, want)
					}
					if p.Measurement != "m" || p.Field != "" || len(p.Tags) != 2 || p.Tags[0].Key != "i" {
						t.Fatalf("%s: origin %q %q %v", key, p.Measurement, p.Field, p.Tags)
					}
					if j > 0 && p.Time.Sub(pts[j-1].Time) != step {
						t.Fatalf("%s: point %d at %v after %v: want one step", key, j, p.Time, pts[j-1].Time)
					}
				}
			}
			st := s.Stats()
			if fail > 0 && st.Failures["status"] == 0 {
				t.Fatalf("no failure counted: %+v", st)
			}
			if st.Duplicates != 0 {
				t.Fatalf("duplicates %d", st.Duplicates)
			}
		})
	}
}

// TestBounds: an answer beyond max_series, max_labels, max_label_length
// or max_bytes is refused and counted too_large; a key beyond
// max_key_len is refused alone.
func TestBounds(t *testing.T) {
	for _, c := range []struct {
		name      string
		f         *fakeProm
		cfg       Config
		maxKeyLen int
		tooLarge  bool
		refused   bool
	}{
		{name: "series", f: &fakeProm{n: 5}, cfg: Config{MaxSeries: 4}, tooLarge: true},
		{name: "labels", f: &fakeProm{n: 1}, cfg: Config{MaxLabels: 2}, tooLarge: true},
		{name: "label length", f: &fakeProm{n: 1, label: strings.Repeat("a", 300)}, tooLarge: true},
		{name: "bytes", f: &fakeProm{n: 50}, cfg: Config{MaxBytes: 1000}, tooLarge: true},
		{name: "key length", f: &fakeProm{n: 2, label: strings.Repeat("a", 100)}, maxKeyLen: 64, refused: true},
		{name: "within", f: &fakeProm{n: 4, label: strings.Repeat("a", 256)}, cfg: Config{MaxSeries: 4, MaxLabels: 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(c.f)
			defer srv.Close()
			cfg := c.cfg
			cfg.URL, cfg.Queries, cfg.Step, cfg.Lookback = srv.URL, []string{"m"}, schema.Dur(time.Second), schema.Dur(10*time.Second)
			rec := &recorder{}
			s, err := New(cfg, Options{Deliver: rec.deliver, MaxKeyLen: c.maxKeyLen})
			if err != nil {
				t.Fatal(err)
			}
			s.Start()
			defer s.StopIntake(context.Background())
			// An evaluation is counted when its request is sent, before
			// its answer is: wait for what the answer must do.
			waitFor(t, "an evaluation answered", func() bool {
				st := s.Stats()
				switch {
				case c.tooLarge:
					return st.Failures["too_large"] > 0
				case c.refused:
					return st.Refused >= 2
				}
				return st.Points >= 4*11
			})
			st := s.Stats()
			switch {
			case c.tooLarge && st.Points != 0:
				t.Fatalf("not refused as too large: %+v", st)
			case c.refused && st.Points != 0:
				t.Fatalf("keys not refused: %+v", st)
			case !c.tooLarge && !c.refused && (st.Points != 4*11 || len(rec.snapshot()) != 4):
				t.Fatalf("%+v, %d series", st, len(rec.snapshot()))
			}
		})
	}
}

func TestKey(t *testing.T) {
	for _, c := range []struct {
		labels    []pipeline.Tag
		key, name string
	}{
		{[]pipeline.Tag{{Key: "__name__", Value: "up"}, {Key: "job", Value: "a"}}, `up{job="a"}`, "up"},
		{[]pipeline.Tag{{Key: "job", Value: "a\"b\n"}}, `{job="a\"b\n"}`, ""},
		{[]pipeline.Tag{{Key: "__name__", Value: "x"}}, `x{}`, "x"},
		{[]pipeline.Tag{{Key: "__name__", Value: "x"}, {Key: "host.name", Value: "é"}}, `x{"host.name"="é"}`, "x"},
		{[]pipeline.Tag{{Key: "__name__", Value: "a.b\n"}, {Key: "j", Value: "1"}}, `{__name__="a.b\n",j="1"}`, "a.b\n"},
	} {
		key, name, tags := Key(c.labels)
		if key != c.key || name != c.name {
			t.Errorf("Key(%v) = %q, %q; want %q, %q", c.labels, key, name, c.key, c.name)
		}
		for _, tg := range tags {
			if tg.Key == "__name__" {
				t.Errorf("Key(%v): tags hold __name__", c.labels)
			}
		}
	}
}

// FuzzKey: a key never holds a control character, is accepted by
// pipeline.CheckKey, and tells different label sets apart.
func FuzzKey(f *testing.F) {
	f.Add("up", "job", "a", "instance", "b")
	f.Add("", "a\x00", "\\", "@5m", "x}")
	f.Fuzz(func(t *testing.T, name, k1, v1, k2, v2 string) {
		if k1 == k2 || k1 == "__name__" || k2 == "__name__" {
			return
		}
		if k1 > k2 {
			k1, v1, k2, v2 = k2, v2, k1, v1
		}
		ls := []pipeline.Tag{{Key: "__name__", Value: name}, {Key: k1, Value: v1}, {Key: k2, Value: v2}}
		key, _, tags := Key(ls)
		if err := pipeline.CheckKey(key); err != nil {
			t.Fatalf("Key(%q) = %q: %v", ls, key, err)
		}
		if len(tags) != 2 {
			t.Fatalf("tags %v", tags)
		}
		other, _, _ := Key([]pipeline.Tag{{Key: "__name__", Value: name}, {Key: k1, Value: v1 + "x"}, {Key: k2, Value: v2}})
		if other == key {
			t.Fatalf("%q and %q+x have the same key %q", v1, v1, key)
		}
	})
}

// TestEvalTime: evaluations fall on multiples of the step since the Unix
// epoch, as pipeline's buckets do, before 1970 too.
func TestEvalTime(t *testing.T) {
	for _, c := range []struct {
		t    time.Time
		step time.Duration
		want int64 // ms
	}{
		{time.UnixMilli(10_500), 7 * time.Second, 7000},
		{time.UnixMilli(14_000), 7 * time.Second, 14_000},
		{time.UnixMilli(-1), time.Minute, -60_000},
		{time.UnixMilli(1_700_000_123_456), time.Minute, 1_700_000_100_000},
	} {
		if got := evalTime(c.t, c.step).UnixMilli(); got != c.want {
			t.Errorf("evalTime(%d ms, %v) = %d ms, want %d", c.t.UnixMilli(), c.step, got, c.want)
		}
	}
}
