package sinks

import (
	"encoding/json"
	"fmt"
	"github.com/forecastd/forecastd/internal/config/schema"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/forecastd/forecastd/pipeline"
)

// pathRec is a forecast of series from influx input (measurement cpu,
// field usage_idle) with a path of h steps.
func pathRec(series string, h int) Record {
	r := forecastRec(series, "in", 0, true)
	r.Measurement, r.Field = "cpu", "usage_idle"
	for k := 1; k <= h; k++ {
		r.Forecast.Path = append(r.Forecast.Path, pipeline.Step{Horizon: k,
			Time: t0.Add(time.Duration(k) * 10 * time.Second), Value: float64(k), Lower: math.NaN(), Upper: math.NaN()})
	}
	return r
}

// tagValues runs SHOW TAG VALUES … WITH KEY = key on measurement m and
// returns the values in the order InfluxDB gives them.
func tagValues(t *testing.T, srv *influxtest.Server, m, key string) []string {
	t.Helper()
	q := srv.Query(t, fmt.Sprintf(`SHOW TAG VALUES ON %q FROM %q WITH KEY = %q`, srv.Database, m, key))
	var res struct {
		Results []struct {
			Series []struct{ Values [][2]string }
		}
	}
	if err := json.Unmarshal([]byte(q), &res); err != nil || len(res.Results) != 1 || len(res.Results[0].Series) != 1 {
		t.Fatalf("SHOW TAG VALUES %s: %s (%v)", key, q, err)
	}
	var out []string
	for _, v := range res.Results[0].Series[0].Values {
		out = append(out, v[1])
	}
	return out
}

// queryAnswer runs an InfluxQL statement against srv and returns its
// answer, an error included (influxtest's Query fails the test on one).
func queryAnswer(t *testing.T, srv *influxtest.Server, q string) string {
	t.Helper()
	resp, err := http.PostForm(srv.URL+"/query", url.Values{"q": {q}, "db": {srv.Database}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestInfluxTagNamesQueryable: by default the sink's tags are named so that
// a person can query them unquoted (no InfluxQL keyword: the real
// InfluxDB parses `WHERE series_key = 'x'`, where `WHERE series = 'x'`
// fails), and a path's steps sort as numbers (horizon "001" … "012":
// SHOW TAG VALUES and GROUP BY give 1, 2, …, 12). With LegacyTagNames the
// tags are the old series, measurement, field and an unpadded horizon,
// which the old quoted queries still find.
func TestInfluxTagNamesQueryable(t *testing.T) {
	t.Parallel()
	const H = 12
	srv := influxtest.Shared(t, influxtest.Options{})
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("legacy=%v", legacy), func(t *testing.T) {
			meas := map[bool]string{false: "current", true: "legacy"}[legacy]
			s := newInflux(t, InfluxConfig{URL: srv.URL, Bucket: srv.Bucket, Measurement: meas, MetricBatchSize: 100, FlushInterval: schema.Dur(time.Hour), LegacyTagNames: legacy})
			const key = `cpu,cpu=cpu0,host=web/1 it's usage_idle`
			if err := s.Write(pathRec(key, H)); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(ctxTimeout(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
			count := func(where string) string {
				t.Helper()
				return queryAnswer(t, srv, fmt.Sprintf(`SELECT count("yhat") FROM %q WHERE %s`, meas, where))
			}
			names := []string{TagSeries, TagMeasurement, TagField}
			if legacy {
				names = []string{"series", "measurement", "field"}
			}
			values := []string{strings.ReplaceAll(key, `'`, `\'`), "cpu", "usage_idle"}
			for i, n := range names {
				quoted := count(fmt.Sprintf(`%q = '%s'`, n, values[i]))
				if !strings.Contains(quoted, fmt.Sprintf(`,%d]]`, H)) {
					t.Errorf("%s quoted: %s, want %d forecasts", n, quoted, H)
				}
				unquoted := count(fmt.Sprintf(`%s = '%s'`, n, values[i]))
				if ok := strings.Contains(unquoted, fmt.Sprintf(`,%d]]`, H)); ok == legacy {
					t.Errorf("%s unquoted: %s; want it to answer %v", n, unquoted, !legacy)
				}
			}
			want := make([]string, H)
			for h := range H {
				want[h] = fmt.Sprint(h + 1)
				if !legacy {
					want[h] = fmt.Sprintf("%03d", h+1)
				}
			}
			got := tagValues(t, srv, meas, TagHorizon)
			if slices.Equal(got, want) == legacy {
				t.Errorf("horizon values in InfluxDB's order %q; want them in numeric order: %v", got, !legacy)
			}
			slices.SortFunc(got, func(a, b string) int {
				x, _ := strconv.Atoi(a)
				y, _ := strconv.Atoi(b)
				return x - y
			})
			if !slices.Equal(got, want) {
				t.Errorf("horizon values %q, want %q", got, want)
			}
		})
	}
}

// TestHorizonDigits: every step of the longest path fits the padded width,
// so that the horizon tag sorts as a number.
func TestHorizonDigits(t *testing.T) {
	if n := len(strconv.Itoa(pipeline.MaxHorizon)); n > HorizonDigits {
		t.Errorf("pipeline.MaxHorizon %d has %d digits, the horizon tag %d", pipeline.MaxHorizon, n, HorizonDigits)
	}
	if got := currentTags.horizonText(7); got != "007" {
		t.Errorf("horizon 7 written %q", got)
	}
	if got := legacyTags.horizonText(7); got != "7" {
		t.Errorf("legacy: horizon 7 written %q", got)
	}
}
