package sinks

import (
	"fmt"
	"github.com/forecastd/forecastd/internal/config/schema"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
)

// postLines writes raw line protocol to the 1.8 HTTP API, failing t unless
// InfluxDB accepts all of it.
func postLines(t *testing.T, srv *influxtest.Server, lines string) {
	t.Helper()
	resp, err := http.Post(srv.URL+"/write?db="+srv.Database, "text/plain", strings.NewReader(lines))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("write %q: %d %s", lines, resp.StatusCode, b)
	}
}

// InfluxDB 1.8 writes the good points of a batch and refuses the bad ones
// ("partial write"): the sink counts what was written as written, and
// only the refused points as rejected. Here the measurement's field
// "error" was first written as an integer, so the outcomes (y, error) of
// a batch are refused by a field type conflict and its forecasts written.
func TestInfluxPartialWriteCounted(t *testing.T) {
	t.Parallel()
	srv := influxtest.Shared(t, influxtest.Options{})
	postLines(t, srv, fmt.Sprintf("forecast,model=x,series_key=other error=1i %d\n", t0.UnixNano()))

	const n, outcomes = 12, 3
	s := newInflux(t, InfluxConfig{URL: srv.URL, Bucket: srv.Bucket, MetricBatchSize: 100, FlushInterval: schema.Dur(time.Hour)})
	for i := range n {
		f := forecastRec("cpu", "in", i, true)
		if err := s.Write(f); err != nil {
			t.Fatal(err)
		}
		if i < outcomes {
			if err := s.Write(outcomeRec(f, 1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Close(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Written != n || st.Rejected != outcomes || st.WriteErrors != 1 || st.Buffered != 0 {
		t.Fatalf("stats %+v, want %d written, %d rejected, 1 write error", st, n, outcomes)
	}
	// InfluxQL (Flux cannot read a field of two types).
	q := srv.Query(t, `SELECT count("yhat"), count("y") FROM "forecast" WHERE series_key = 'cpu'`)
	if want := fmt.Sprintf(`"values":[["1970-01-01T00:00:00Z",%d,null]]`, n); !strings.Contains(q, want) {
		t.Fatalf("InfluxDB holds %s, want %d forecasts and no outcome", q, n)
	}
}

// A batch with a line InfluxDB cannot parse: the other lines are written
// and counted as such, the unparsable one as rejected.
func TestPartialWriteCount(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		n    int
		want int
		ok   bool
	}{
		{`partial write: field type conflict: input field "error" on measurement "forecast" is type float, already exists as type integer dropped=3`, 15, 3, true},
		{`partial write: unable to parse 'forecast,series=a\ yhat=1 1': invalid tag format dropped=0`, 10, 1, true},
		{"partial write: unable to parse 'a': x\nunable to parse 'b': y dropped=0", 10, 2, true},
		{`partial write: max-values-per-tag limit exceeded (100000/100000): measurement="forecast" tag="series" value="x" dropped=20`, 10, 10, true},
		{`unable to parse 'forecast,series=a\ yhat=1 1': invalid tag format`, 10, 0, false},
		{`database not found: "nodb"`, 10, 0, false},
		{`partial write: something new dropped=0`, 10, 0, false},
	} {
		got, ok := partialWriteRefused(tc.msg, tc.n)
		if got != tc.want || ok != tc.ok {
			t.Errorf("partialWriteRefused(%q, %d) = %d, %v; want %d, %v", tc.msg, tc.n, got, ok, tc.want, tc.ok)
		}
	}
}
