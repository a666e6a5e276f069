package history

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzPromResults: DecodePromResults keeps within its bounds whatever it
// is sent, each series' points in time order and its labels sorted, and
// reads the labels encoding/json reads.
func FuzzPromResults(f *testing.F) {
	f.Add([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"m","host":"a"},"values":[[1700000000,"1.5"],[1700000060.5,"2"]]},{"metric":{"host":"b","__name__":"m"},"values":[[1700000000,"3"]]}]}}`))
	f.Add([]byte(`{"status":"success","data":{"result":[{"metric":{"a":"x","a":"y"},"values":[[2,"1"],[1,"2"]]}]}}`))
	f.Add([]byte(`{"status":"success","data":{"result":[{"metric":{"k":"\u00e9\n"},"value":[1,"1"]},{"metric":{"l":"` + string(bytes.Repeat([]byte("v"), 40)) + `"}}]}}`))
	f.Add([]byte(`{"status":"error","error":"bad"}`))
	lim := PromLimits{MaxBytes: 1 << 20, MaxSeries: 3, MaxPoints: 8, MaxLabels: 4, MaxLabelLength: 32}
	f.Fuzz(func(t *testing.T, body []byte) {
		res, class, err := DecodePromResults(bytes.NewReader(body), lim)
		if err != nil {
			if class == "" {
				t.Fatalf("error %v without a class", err)
			}
			return
		}
		points := 0
		for _, r := range res {
			points += len(r.Points)
			if len(r.Labels) > lim.MaxLabels {
				t.Fatalf("%d labels", len(r.Labels))
			}
			for i, l := range r.Labels {
				if len(l.Key) > lim.MaxLabelLength || len(l.Value) > lim.MaxLabelLength {
					t.Fatalf("label %q=%q beyond %d bytes", l.Key, l.Value, lim.MaxLabelLength)
				}
				if i > 0 && r.Labels[i-1].Key > l.Key {
					t.Fatalf("labels not sorted: %v", r.Labels)
				}
			}
			for i := 1; i < len(r.Points); i++ {
				if r.Points[i].Time.Before(r.Points[i-1].Time) {
					t.Fatalf("points out of order: %v", r.Points)
				}
			}
		}
		if len(res) > lim.MaxSeries || points > lim.MaxPoints {
			t.Fatalf("%d series, %d points: beyond the bounds", len(res), points)
		}
		// The reference reads keys exactly, as Prometheus writes them
		// and the decoder reads them (encoding/json would match a
		// struct's fields ignoring case).
		top, ok := exactMembers(body)
		if !ok {
			return
		}
		data, ok := exactMembers(top["data"])
		var results []json.RawMessage
		if !ok || json.Unmarshal(data["result"], &results) != nil || len(results) != len(res) {
			return
		}
		for i, raw := range results {
			r, ok := exactMembers(raw)
			if !ok {
				continue
			}
			metric := map[string]json.RawMessage{}
			if m, has := r["metric"]; has {
				if metric, ok = exactMembers(m); !ok {
					continue // null, or a name given twice: both kept here
				}
			}
			if len(metric) != len(res[i].Labels) {
				continue
			}
			for _, l := range res[i].Labels {
				var v string
				if json.Unmarshal(metric[l.Key], &v) != nil || v != l.Value {
					t.Fatalf("series %d: label %q=%q, encoding/json reads %s", i, l.Key, l.Value, metric[l.Key])
				}
			}
		}
	})
}

// exactMembers decodes the JSON object raw into its members by their
// exact keys; ok is false if raw is not an object or names a member
// twice (the decoder reads every copy, encoding/json keeps the last).
func exactMembers(raw []byte) (map[string]json.RawMessage, bool) {
	if !json.Valid(raw) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	m := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		if _, dup := m[k]; dup {
			return nil, false
		}
		m[k] = v
	}
	return m, true
}
