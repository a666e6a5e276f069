package sources

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

var recv = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func mustDecoder(t testing.TB, cfg DecoderConfig) *Decoder {
	t.Helper()
	d, err := NewDecoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// reasonsOf lists the reasons in err's tree, in order.
func reasonsOf(err error) []Reason {
	var rs []Reason
	EachParseError(err, func(pe *ParseError) { rs = append(rs, pe.Reason) })
	return rs
}

type wantPoint struct {
	key    string
	time   time.Time
	value  float64
	noTime bool
}

func checkPoints(t *testing.T, got []KeyedPoint, want []wantPoint) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d points %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Key != w.key || !g.Time.Equal(w.time) || g.Value != w.value || g.NoTime != w.noTime {
			t.Errorf("point %d = {%q %v %v noTime=%v}, want {%q %v %v noTime=%v}",
				i, g.Key, g.Time, g.Value, g.NoTime, w.key, w.time, w.value, w.noTime)
		}
	}
}

func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	ts := time.Date(2023, 12, 31, 23, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		tf      TimeFormat
		subject string
		payload string
		want    []wantPoint
		reasons []Reason
	}{
		{name: "rfc3339", payload: `{"time":"2023-12-31T23:00:00Z","value":1.5}`,
			want: []wantPoint{{"in.a", ts, 1.5, false}}},
		{name: "rfc3339 nano offset", payload: `{"time":"2024-01-01T00:00:00.123456789+01:00","value":-2}`,
			want: []wantPoint{{"in.a", ts.Add(123456789), -2, false}}},
		{name: "unix", payload: `{"time":1704063600,"value":3}`,
			want: []wantPoint{{"in.a", ts, 3, false}}},
		{name: "unix fraction", payload: `{"time":1704063600.25,"value":3}`,
			want: []wantPoint{{"in.a", ts.Add(250 * time.Millisecond), 3, false}}},
		{name: "unix exponent", payload: `{"time":1.7040636e9,"value":3}`,
			want: []wantPoint{{"in.a", ts, 3, false}}},
		{name: "unix_ms", tf: TimeUnixMs, payload: `{"time":1704063600123,"value":3}`,
			want: []wantPoint{{"in.a", ts.Add(123 * time.Millisecond), 3, false}}},
		{name: "unix_ms fraction", tf: TimeUnixMs, payload: `{"time":1704063600123.5,"value":3}`,
			want: []wantPoint{{"in.a", ts.Add(123*time.Millisecond + 500*time.Microsecond), 3, false}}},
		{name: "unix_us", tf: TimeUnixUs, payload: `{"time":1704063600000001,"value":3}`,
			want: []wantPoint{{"in.a", ts.Add(time.Microsecond), 3, false}}},
		{name: "unix_ns", tf: TimeUnixNs, payload: `{"time":1704063600000000001,"value":3}`,
			want: []wantPoint{{"in.a", ts.Add(1), 3, false}}},
		{name: "no time", payload: ` {"value": 7} `,
			want: []wantPoint{{"in.a", recv, 7, true}}},
		{name: "null time", payload: `{"value":7,"time":null}`,
			want: []wantPoint{{"in.a", recv, 7, true}}},
		{name: "series", payload: `{"series":"cpu.load","value":1e2}`,
			want: []wantPoint{{"in.a cpu.load", recv, 100, true}}},
		{name: "escaped series", payload: `{"series":"cpu\u002eload \"x\"","value":0}`,
			want: []wantPoint{{`in.a cpu.load "x"`, recv, 0, true}}},
		{name: "null series", payload: `{"series":null,"value":0}`,
			want: []wantPoint{{"in.a", recv, 0, true}}},
		{name: "ignored members", payload: `{"host":{"a":[1,true,null,"x"]},"value":4,"unit":"%","time":1704063600}`,
			want: []wantPoint{{"in.a", ts, 4, false}}},
		{name: "last duplicate wins", payload: `{"value":1,"value":2}`,
			want: []wantPoint{{"in.a", recv, 2, true}}},
		{name: "array", payload: `[{"value":1,"time":1704063600},{"value":2,"series":"b"}]`,
			want: []wantPoint{{"in.a", ts, 1, false}, {"in.a b", recv, 2, true}}},
		{name: "underflow is zero", payload: `{"value":1e-400}`,
			want: []wantPoint{{"in.a", recv, 0, true}}},

		{name: "invalid", payload: `{"value":1`, reasons: []Reason{ReasonInvalidJSON}},
		{name: "trailing", payload: `{"value":1} x`, reasons: []Reason{ReasonInvalidJSON}},
		{name: "not object", payload: `"x"`, reasons: []Reason{ReasonInvalidJSON}},
		{name: "bad escape", payload: `{"series":"\q","value":1}`, reasons: []Reason{ReasonInvalidJSON}},
		{name: "leading zero", payload: `{"value":01}`, reasons: []Reason{ReasonInvalidJSON}},
		{name: "deep", payload: `{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `,"value":1}`, reasons: []Reason{ReasonInvalidJSON}},
		{name: "empty", payload: " \n", reasons: []Reason{ReasonEmpty}},
		{name: "empty array", payload: `[]`, reasons: []Reason{ReasonEmpty}},
		{name: "missing value", payload: `{"time":1704063600}`, reasons: []Reason{ReasonMissingValue}},
		{name: "null value", payload: `{"value":null}`, reasons: []Reason{ReasonMissingValue}},
		{name: "string value", payload: `{"value":"1.5"}`, reasons: []Reason{ReasonInvalidValue}},
		{name: "bool value", payload: `{"value":true}`, reasons: []Reason{ReasonInvalidValue}},
		{name: "overflow", payload: `{"value":-1e400}`, reasons: []Reason{ReasonNonFinite}},
		{name: "bad time string", payload: `{"value":1,"time":"yesterday"}`, reasons: []Reason{ReasonBadTime}},
		{name: "bad time type", payload: `{"value":1,"time":true}`, reasons: []Reason{ReasonBadTime}},
		{name: "time overflow", payload: `{"value":1,"time":1e30}`, reasons: []Reason{ReasonBadTime}},
		{name: "time int overflow", tf: TimeUnixNs, payload: `{"value":1,"time":99999999999999999999}`, reasons: []Reason{ReasonBadTime}},
		{name: "future", payload: `{"value":1,"time":"2024-01-01T02:00:00Z"}`, reasons: []Reason{ReasonOutOfRangeTime}},
		{name: "past", payload: `{"value":1,"time":0}`, reasons: []Reason{ReasonOutOfRangeTime}},
		{name: "empty series", payload: `{"series":"","value":1}`, reasons: []Reason{ReasonMissingSeries}},
		{name: "numeric series", payload: `{"series":5,"value":1}`, reasons: []Reason{ReasonInvalidJSON}},
		{name: "no subject", subject: "-", payload: `{"value":1}`, reasons: []Reason{ReasonMissingSeries}},
		{name: "array partial", payload: `[{"value":1},5,{"value":"x"},{"value":2,"series":"b"}]`,
			want:    []wantPoint{{"in.a", recv, 1, true}, {"in.a b", recv, 2, true}},
			reasons: []Reason{ReasonInvalidJSON, ReasonInvalidValue}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := mustDecoder(t, DecoderConfig{Format: FormatJSON, Settings: &JSONSettings{TimeFormat: tc.tf}})
			subject := "in.a"
			if tc.subject == "-" {
				subject = ""
			}
			got, err := d.Decode(nil, subject, []byte(tc.payload), recv)
			checkPoints(t, got, tc.want)
			if rs := reasonsOf(err); !slices.Equal(rs, tc.reasons) {
				t.Fatalf("reasons %v, want %v (err %v)", rs, tc.reasons, err)
			}
			if len(got) == 0 && err == nil {
				t.Fatal("no point and no error")
			}
		})
	}
}

func TestDecodeJSONArrayLines(t *testing.T) {
	d := mustDecoder(t, DecoderConfig{Format: FormatJSON})
	_, err := d.DecodeJSON(nil, "s", []byte(`[{"value":1},{"value":null},{"value":true}]`), recv)
	var lines []int
	EachParseError(err, func(pe *ParseError) { lines = append(lines, pe.Line) })
	if !slices.Equal(lines, []int{2, 3}) {
		t.Fatalf("lines %v, want [2 3]: %v", lines, err)
	}
	if !errors.Is(err, ErrMissingValue) || !errors.Is(err, ErrInvalidValue) || errors.Is(err, ErrNonFinite) {
		t.Fatalf("errors.Is on %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "line 3") || !strings.Contains(msg, "a boolean") {
		t.Fatalf("message %q does not say what was wrong", msg)
	}
}

func TestDecodeWindowAndLimits(t *testing.T) {
	t.Parallel()
	payload := []byte(`{"value":1,"time":"2023-12-25T00:00:00Z"}`) // 7 days before recv
	d := mustDecoder(t, DecoderConfig{Format: FormatJSON, MaxPast: 24 * time.Hour})
	if _, err := d.Decode(nil, "s", payload, recv); !errors.Is(err, ErrOutOfRangeTime) {
		t.Fatalf("MaxPast 24h: %v", err)
	}
	d = mustDecoder(t, DecoderConfig{Format: FormatJSON, MaxPast: -1})
	if _, err := d.Decode(nil, "s", payload, recv); err != nil {
		t.Fatalf("MaxPast unlimited: %v", err)
	}
	d = mustDecoder(t, DecoderConfig{Format: FormatJSON, MaxPast: 24 * time.Hour})
	if _, err := d.Decode(nil, "s", payload, time.Time{}); err != nil {
		t.Fatalf("zero recv disables the window: %v", err)
	}
	for _, f := range []Format{FormatJSON, FormatInflux, FormatValue} {
		d := mustDecoder(t, DecoderConfig{Format: f, MaxPayload: 8})
		pts, err := d.Decode(nil, "s", []byte("123456789"), recv)
		var pe *ParseError
		if len(pts) != 0 || !errors.As(err, &pe) || pe.Reason != ReasonTooLarge || !strings.Contains(pe.Error(), "9 bytes") {
			t.Errorf("%v: too large: %v %v", f, pts, err)
		}
	}
}

func TestNewDecoderErrors(t *testing.T) {
	t.Parallel()
	for _, cfg := range []DecoderConfig{
		{},
		{Format: 9},
		{Format: FormatJSON, Settings: &JSONSettings{TimeFormat: 9}},
		{Format: FormatInflux, InfluxPrecision: time.Minute},
	} {
		if _, err := NewDecoder(cfg); err == nil {
			t.Errorf("NewDecoder(%+v) accepted", cfg)
		}
	}
	for _, s := range []string{"json", "influx", "value"} {
		f, err := ParseFormat(s)
		if err != nil || f.String() != s {
			t.Errorf("ParseFormat(%q) = %v, %v", s, f, err)
		}
	}
	for _, s := range []string{"unix", "unix_ms", "unix_us", "unix_ns"} {
		f, err := ParseTimeFormat(s)
		if err != nil || f.String() != s {
			t.Errorf("ParseTimeFormat(%q) = %v, %v", s, f, err)
		}
	}
	if _, err := ParseFormat("csv"); err == nil {
		t.Error("ParseFormat(csv) accepted")
	}
	if _, err := ParseTimeFormat("unix_s"); err == nil {
		t.Error("ParseTimeFormat(unix_s) accepted")
	}
	seen := map[string]bool{}
	for _, r := range Reasons() {
		if s := r.String(); s == "" || strings.HasPrefix(s, "reason(") || seen[s] {
			t.Errorf("reason %d has bad or duplicate name %q", r, s)
		}
		seen[r.String()] = true
	}
}

func TestDecodeValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		payload string
		subject string
		want    float64
		reason  Reason
	}{
		{payload: "42", want: 42},
		{payload: " -1.5e3\r\n", want: -1500},
		{payload: "0", want: 0},
		{payload: "", reason: ReasonEmpty},
		{payload: "  ", reason: ReasonEmpty},
		{payload: "abc", reason: ReasonInvalidValue},
		{payload: "1 2", reason: ReasonInvalidValue},
		{payload: "NaN", reason: ReasonNonFinite},
		{payload: "-Inf", reason: ReasonNonFinite},
		{payload: "1e400", reason: ReasonNonFinite},
		{payload: "1", subject: "-", reason: ReasonMissingSeries},
	} {
		t.Run(tc.payload, func(t *testing.T) {
			d := mustDecoder(t, DecoderConfig{Format: FormatValue})
			subject := "sensors.t1"
			if tc.subject == "-" {
				subject = ""
			}
			got, err := d.Decode(nil, subject, []byte(tc.payload), recv)
			if tc.reason != 0 {
				var pe *ParseError
				if len(got) != 0 || !errors.As(err, &pe) || pe.Reason != tc.reason {
					t.Fatalf("got %v, %v; want reason %v", got, err, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkPoints(t, got, []wantPoint{{subject, recv, tc.want, true}})
		})
	}
}

// Telegraf's NATS output (data_format = "influx") samples, as its inputs
// emit them.
const telegrafBatch = `cpu,cpu=cpu-total,host=server01 usage_idle=98.5,usage_user=1.2,usage_system=0.3 1704063600000000000
mem,host=server01 active=123456i,available_percent=55.5,total=17179869184u 1704063600000000000
system,host=server01 load1=0.5,n_cpus=4i,uptime_format="1 day, 2:03" 1704063600000000000
disk,device=sda1,fstype=ext4,host=server01,mode=rw,path=/ free=1024i,used_percent=42.1,inodes_used=7u 1704063600000000000
net,host=server01,interface=eth0 bytes_recv=1u,drop_in=0i,up=true 1704063600000000000
`

func TestDecodeInfluxTelegraf(t *testing.T) {
	t.Parallel()
	ts := time.Date(2023, 12, 31, 23, 0, 0, 0, time.UTC)
	d := mustDecoder(t, DecoderConfig{Format: FormatInflux})
	got, err := d.Decode(nil, "telegraf", []byte(telegrafBatch), recv)
	checkPoints(t, got, []wantPoint{
		{"cpu,cpu=cpu-total,host=server01 usage_idle", ts, 98.5, false},
		{"cpu,cpu=cpu-total,host=server01 usage_user", ts, 1.2, false},
		{"cpu,cpu=cpu-total,host=server01 usage_system", ts, 0.3, false},
		{"mem,host=server01 active", ts, 123456, false},
		{"mem,host=server01 available_percent", ts, 55.5, false},
		{"mem,host=server01 total", ts, 17179869184, false},
		{"system,host=server01 load1", ts, 0.5, false},
		{"system,host=server01 n_cpus", ts, 4, false},
		{"disk,device=sda1,fstype=ext4,host=server01,mode=rw,path=/ free", ts, 1024, false},
		{"disk,device=sda1,fstype=ext4,host=server01,mode=rw,path=/ used_percent", ts, 42.1, false},
		{"disk,device=sda1,fstype=ext4,host=server01,mode=rw,path=/ inodes_used", ts, 7, false},
		{"net,host=server01,interface=eth0 bytes_recv", ts, 1, false},
		{"net,host=server01,interface=eth0 drop_in", ts, 0, false},
	})
	if rs := reasonsOf(err); !slices.Equal(rs, []Reason{ReasonUnsupportedFieldType, ReasonUnsupportedFieldType}) {
		t.Fatalf("reasons %v: %v", rs, err)
	}
	var pes []*ParseError
	EachParseError(err, func(pe *ParseError) { pes = append(pes, pe) })
	if pes[0].Line != 3 || pes[0].Series != "system,host=server01 uptime_format" || !strings.Contains(pes[0].Msg, "string") ||
		pes[1].Line != 5 || pes[1].Series != "net,host=server01,interface=eth0 up" || !strings.Contains(pes[1].Msg, "boolean") {
		t.Fatalf("field errors do not name the field: %v", err)
	}
	p := got[0]
	if p.Measurement != "cpu" || p.Field != "usage_idle" ||
		!slices.Equal(p.Tags, []Tag{{Key: "cpu", Value: "cpu-total"}, {Key: "host", Value: "server01"}}) {
		t.Fatalf("parts of %q: %q %q %v", p.Key, p.Measurement, p.Field, p.Tags)
	}

	// A second decode of the same series reuses the cached keys and tags.
	again, _ := d.Decode(nil, "telegraf", []byte(telegrafBatch), recv)
	if &again[0].Tags[0] != &got[0].Tags[0] {
		t.Error("tags of a known series were not reused")
	}
}

func TestDecodeInflux(t *testing.T) {
	t.Parallel()
	ts := time.Date(2023, 12, 31, 23, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		prec    time.Duration
		payload string
		want    []wantPoint
		reasons []Reason
	}{
		{name: "sorted tags", payload: "cpu,host=a,cpu=x f=1 1704063600000000000",
			want: []wantPoint{{"cpu,cpu=x,host=a f", ts, 1, false}}},
		{name: "escapes", payload: `my\ meas\,x,tag\ key=va\,l\=ue field\ k\=y=2 1704063600000000000`,
			want: []wantPoint{{`my\ meas\,x,tag\ key=va\,l\=ue field\ k\=y`, ts, 2, false}}},
		{name: "no timestamp", payload: "cpu f=1.5\n",
			want: []wantPoint{{"cpu f", recv, 1.5, true}}},
		{name: "seconds", prec: time.Second, payload: "cpu f=-1 1704063600",
			want: []wantPoint{{"cpu f", ts, -1, false}}},
		{name: "milliseconds", prec: time.Millisecond, payload: "cpu f=1 1704063600001",
			want: []wantPoint{{"cpu f", ts.Add(time.Millisecond), 1, false}}},
		{name: "comments and blank lines", payload: "# a comment\n\ncpu f=1 1704063600000000000\r\n\n",
			want: []wantPoint{{"cpu f", ts, 1, false}}},
		{name: "syntax error line refused alone", payload: "cpu f=1 1704063600000000000\ncpu,host f=2\ncpu g=3 1704063600000000000",
			want:    []wantPoint{{"cpu f", ts, 1, false}, {"cpu g", ts, 3, false}},
			reasons: []Reason{ReasonInvalidLineProtocol}},
		{name: "bad field value refuses line", payload: "cpu f=1,g=1.2.3 1704063600000000000\ncpu h=1 1704063600000000000",
			want:    []wantPoint{{"cpu h", ts, 1, false}},
			reasons: []Reason{ReasonInvalidLineProtocol}},
		{name: "nan", payload: "cpu f=NaN", reasons: []Reason{ReasonInvalidLineProtocol}},
		{name: "int overflow", payload: "cpu f=99999999999999999999i", reasons: []Reason{ReasonInvalidValue}},
		{name: "only strings", payload: `cpu s="x",b=t`, reasons: []Reason{ReasonUnsupportedFieldType, ReasonUnsupportedFieldType}},
		{name: "string then syntax error", payload: `cpu s="x",f=1 12x`, reasons: []Reason{ReasonInvalidLineProtocol}},
		{name: "timestamp overflow", payload: "cpu f=1 99999999999999999999", reasons: []Reason{ReasonBadTime}},
		{name: "seconds overflow", prec: time.Second, payload: "cpu f=1 9999999999999999", reasons: []Reason{ReasonBadTime}},
		{name: "future line", payload: "cpu f=1,g=2 1804063600000000000\ncpu h=3", reasons: []Reason{ReasonOutOfRangeTime},
			want: []wantPoint{{"cpu h", recv, 3, true}}},
		{name: "past", payload: "cpu f=1 0", reasons: []Reason{ReasonOutOfRangeTime}},
		{name: "invalid utf8", payload: "cpu,h=\xff f=1", reasons: []Reason{ReasonInvalidLineProtocol}},
		{name: "empty", payload: "", reasons: []Reason{ReasonEmpty}},
		{name: "comments only", payload: "# nothing\n", reasons: []Reason{ReasonEmpty}},
		{name: "no field", payload: "cpu,host=a", reasons: []Reason{ReasonInvalidLineProtocol}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := mustDecoder(t, DecoderConfig{Format: FormatInflux, InfluxPrecision: tc.prec})
			got, err := d.Decode(nil, "ignored", []byte(tc.payload), recv)
			checkPoints(t, got, tc.want)
			if rs := reasonsOf(err); !slices.Equal(rs, tc.reasons) {
				t.Fatalf("reasons %v, want %v (err %v)", rs, tc.reasons, err)
			}
			if len(got) == 0 && err == nil {
				t.Fatal("no point and no error")
			}
		})
	}
}

func TestDecodeInfluxKeyCacheBounded(t *testing.T) {
	d := mustDecoder(t, DecoderConfig{Format: FormatInflux, MaxKeys: 4})
	var b strings.Builder
	for i := range 10 {
		b.WriteString("m,i=" + string(rune('a'+i)) + " f=1\n")
	}
	got, err := d.Decode(nil, "", []byte(b.String()), recv)
	if err != nil || len(got) != 10 {
		t.Fatalf("%d points, %v", len(got), err)
	}
	if n := len(d.keys); n > 4 {
		t.Fatalf("key cache holds %d entries, limit 4", n)
	}
	if got[9].Key != "m,i=j f" || got[9].Tags[0].Value != "j" {
		t.Fatalf("last point %+v", got[9])
	}
}

// TestMessageOrigin: a message says where each of its points came from:
// its subject and, for line protocol, the point's measurement, field and
// tags (runner.Originer).
func TestMessageOrigin(t *testing.T) {
	t.Parallel()
	d := mustDecoder(t, DecoderConfig{Format: FormatInflux})
	pts, err := d.Decode(nil, "telegraf", []byte("cpu,host=a,cpu=0 idle=1,user=2\n"), recv)
	if err != nil {
		t.Fatal(err)
	}
	m := &Message{Subject: "telegraf", Points: pts}
	for i, field := range []string{"idle", "user"} {
		o := m.Origin(i)
		if o.Subject != "telegraf" || o.Measurement != "cpu" || o.Field != field ||
			!slices.Equal(o.Tags, []Tag{{Key: "cpu", Value: "0"}, {Key: "host", Value: "a"}}) {
			t.Errorf("point %d: origin %+v", i, o)
		}
	}
}
