package sinks

import (
	"fmt"
	"github.com/forecastd/forecastd/internal/config/schema"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
)

// Tag keys and values InfluxDB 1.8 cannot take as they are: a value (the
// series key) ending in a backslash has no line-protocol encoding, a tag
// named "time" is refused, and a tag named like one of the sink's fields
// or tags would collide with it. Every record is written, the series tag
// percent-encodes a trailing backslash, and input tags that collide are
// renamed with the prefix "tag_".
func TestInfluxAwkwardTags(t *testing.T) {
	t.Parallel()
	srv := influxtest.Shared(t, influxtest.Options{})
	s := newInflux(t, InfluxConfig{URL: srv.URL, Bucket: srv.Bucket, MetricBatchSize: 100, FlushInterval: schema.Dur(time.Hour)})
	type tc struct {
		series string
		tags   []Tag
		want   map[string]string // tags in InfluxDB besides model
	}
	cases := []tc{
		{`win_disk,instance=C:\ free`, nil, map[string]string{"series_key": `win_disk,instance=C:\ free`}},
		{`path\`, nil, map[string]string{"series_key": `path%5C`}},
		{`a\,b\\`, []Tag{{Key: "dir", Value: `c:\`}}, map[string]string{"series_key": `a\,b%5C%5C`, "dir": `c:%5C`}},
		{"t", []Tag{{Key: "time", Value: "x"}, {Key: "yhat", Value: "1"}, {Key: "y", Value: "2"}, {Key: "error", Value: "e"}, {Key: "anomaly_score", Value: "a"}}, map[string]string{"series_key": "t",
			"tag_time": "x", "tag_yhat": "1", "tag_y": "2", "tag_error": "e", "tag_anomaly_score": "a"}},
		{"m", []Tag{{Key: "model", Value: "xeon"}, {Key: "series", Value: "s"}, {Key: "series_key", Value: "k"}, {Key: "src_field", Value: "f"}, {Key: "tag_model", Value: "keep"}}, map[string]string{"series_key": "m",
			"tag_tag_model": "xeon", "tag_series": "s", "tag_series_key": "k", "tag_src_field": "f", "tag_model": "keep"}},
		{"u", []Tag{{Key: "_field", Value: "f"}, {Key: "empty", Value: ""}}, map[string]string{"series_key": "u", "tag__field": "f"}},
	}
	for i, c := range cases {
		r := forecastRec(c.series, "in", i, true)
		r.Tags = c.tags
		if err := s.Write(r); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(outcomeRec(r, 7)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Written != uint64(2*len(cases)) || st.Rejected+st.WriteErrors != 0 {
		t.Fatalf("stats %+v, want %d written and nothing refused", st, 2*len(cases))
	}
	got := map[time.Time]map[string]string{}
	fields := map[time.Time]int{}
	for _, r := range queryAll(t, srv, "forecast") {
		got[r.Time] = r.Tags
		fields[r.Time]++
	}
	for i, c := range cases {
		tm := t0.Add(time.Duration(i+1) * 10 * time.Second)
		want := map[string]string{"model": "aosvr"}
		for k, v := range c.want {
			want[k] = v
		}
		if fmt.Sprint(got[tm]) != fmt.Sprint(want) {
			t.Errorf("case %d: tags %v, want %v", i, got[tm], want)
		}
		if fields[tm] != 6 { // yhat, yhat_lower, yhat_upper, y, error, anomaly_score
			t.Errorf("case %d: %d fields, want 6", i, fields[tm])
		}
	}
}
