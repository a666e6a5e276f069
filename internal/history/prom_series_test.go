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
		var ref struct {
			Data struct {
				Result []struct {
					Metric map[string]string
				}
			}
		}
		if json.Unmarshal(body, &ref) != nil || len(ref.Data.Result) != len(res) {
			return
		}
		for i, r := range ref.Data.Result {
			if len(r.Metric) != len(res[i].Labels) {
				continue // a name given twice: both kept here, the last by encoding/json
			}
			for _, l := range res[i].Labels {
				if r.Metric[l.Key] != l.Value {
					t.Fatalf("series %d: label %q=%q, encoding/json reads %q", i, l.Key, l.Value, r.Metric[l.Key])
				}
			}
		}
	})
}
