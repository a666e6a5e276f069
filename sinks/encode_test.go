package sinks

import (
	"encoding/json"
	"math"
	"testing"
	"unicode/utf8"
)

// appendJSONString must agree with encoding/json on what the string
// decodes to, and produce valid JSON, for any input.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "cpu", `a"b\c`, "tab\there\nnl\r\x00\x1f\x7f", "\xff\xfe", "é€😀", "\u2028\u2029", "a\xc3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := appendJSONString(nil, s)
		if !json.Valid(b) {
			t.Fatalf("invalid JSON %q for %q", b, s)
		}
		var got, want string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		ref, _ := json.Marshal(s)
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%q decodes to %q, encoding/json's to %q", s, got, want)
		}
		if !utf8.Valid(b) {
			t.Fatalf("invalid UTF-8 %q", b)
		}
	})
}

func TestForecastJSONNonFinite(t *testing.T) {
	r := forecastRec("s", "in", 0, true)
	r.Forecast.Value = math.Inf(1)
	var m map[string]any
	b := appendForecastJSON(nil, &r)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if m["yhat"] != nil || m["yhat_lower"] != -0.75 || m["yhat_upper"] != 1.75 || m["horizon"] != 1.0 {
		t.Errorf("%s", b)
	}
}

func TestRingDropsOldest(t *testing.T) {
	q := newRing(3)
	var dropped int
	for i := range 5 {
		if q.push(Record{Series: string(rune('a' + i))}) {
			dropped++
		}
	}
	if dropped != 2 || q.len() != 3 {
		t.Fatalf("dropped %d, len %d; want 2, 3", dropped, q.len())
	}
	got := q.pop(nil, 2)
	if len(got) != 2 || got[0].Series != "c" || got[1].Series != "d" || q.len() != 1 {
		t.Fatalf("pop: %v, len %d", got, q.len())
	}
	q.push(Record{Series: "f"})
	q.push(Record{Series: "g"})
	got = q.pop(got[:0], 10)
	if len(got) != 3 || got[0].Series != "e" || got[2].Series != "g" || q.len() != 0 {
		t.Fatalf("pop: %v", got)
	}
}
