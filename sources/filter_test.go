package sources

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFieldFilterGlobs(t *testing.T) {
	for _, tc := range []struct {
		pat  string
		yes  []string
		no   []string
		fail bool
	}{
		{pat: "usage_idle", yes: []string{"usage_idle"}, no: []string{"usage_idle2", "xusage_idle", ""}},
		{pat: "usage_*", yes: []string{"usage_", "usage_guest_nice", "usage_a/b c"}, no: []string{"usag_x"}},
		{pat: "*_percent", yes: []string{"used_percent", "_percent"}, no: []string{"percent"}},
		{pat: "err_?n", yes: []string{"err_in"}, no: []string{"err_out", "err_n"}},
		{pat: "[dr]rop_in", yes: []string{"drop_in", "rrop_in"}, no: []string{"crop_in"}},
		{pat: "load[!1]*", yes: []string{"load5", "load51"}, no: []string{"load1", "load15", "load"}},
		{pat: "load[0-9]", yes: []string{"load1", "load5"}, no: []string{"loadx", "load15"}},
		{pat: "{high,low}_*", yes: []string{"high_free", "low_total"}, no: []string{"huge_pages_free"}},
		{pat: `a\*b.c`, yes: []string{"a*b.c"}, no: []string{"axb.c", "a*bxc"}},
		{pat: "*", yes: []string{"", "anything at all"}},
		{pat: "é*", yes: []string{"éü", "é"}, no: []string{"e"}}, // not "é?": see internal/keyglob
		{pat: "", fail: true},
		{pat: "[ab", fail: true},
		{pat: "{a,b", fail: true},
		{pat: "a}", fail: true},
		{pat: `x\`, fail: true},
	} {
		f, err := NewFieldFilter([]string{tc.pat}, nil)
		if tc.fail {
			if err == nil || !strings.Contains(err.Error(), "fieldpass[0]") {
				t.Errorf("%q: error %v, want one naming fieldpass[0]", tc.pat, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.pat, err)
			continue
		}
		for _, k := range tc.yes {
			if !f.Keep(k) {
				t.Errorf("%q does not match %q", tc.pat, k)
			}
		}
		for _, k := range tc.no {
			if f.Keep(k) {
				t.Errorf("%q matches %q", tc.pat, k)
			}
		}
	}
	// Both: kept if it passes and is not dropped (Telegraf's order).
	f, err := NewFieldFilter([]string{"usage_*"}, []string{"usage_guest*", "usage_irq"})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]bool{"usage_idle": true, "usage_guest": false, "usage_guest_nice": false, "usage_irq": false, "load1": false} {
		if f.Keep(k) != want {
			t.Errorf("Keep(%q) = %v", k, !want)
		}
	}
	if _, err := NewFieldFilter([]string{"ok", "[x"}, []string{"{"}); err == nil ||
		!strings.Contains(err.Error(), "fieldpass[1]") || !strings.Contains(err.Error(), "fielddrop[0]") {
		t.Errorf("error %v, want every bad pattern named", err)
	}
}

// captureSeries decodes the real Telegraf capture with dec and returns,
// per series key, its distinct values and points, and the parse errors by
// reason.
func captureSeries(t *testing.T, dec *Decoder) (distinct map[string]map[float64]bool, points map[string]int, errs map[Reason]int) {
	t.Helper()
	f, err := os.Open("../testdata/telegraf/capture.lp")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	distinct, points, errs = map[string]map[float64]bool{}, map[string]int{}, map[Reason]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var pts []KeyedPoint
	for sc.Scan() {
		var err error
		pts, err = dec.Decode(pts[:0], "telegraf", sc.Bytes(), time.Time{})
		EachParseError(err, func(pe *ParseError) { errs[pe.Reason]++ })
		for _, p := range pts {
			if distinct[p.Key] == nil {
				distinct[p.Key] = map[float64]bool{}
			}
			distinct[p.Key][p.Value] = true
			points[p.Key]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return distinct, points, errs
}

// The Telegraf capture (v1.32.3, cpu, mem, disk, diskio, net, system)
// makes 100 series, 36 of them constant (guest and irq time, totals,
// huge pages, swap on a machine without, error counters, n_cpus), and a
// string field (uptime_format) refused on every line. Telegraf's
// fielddrop globs leave all of them out: no series, no refusal, every
// field counted.
func TestFieldFilterTelegrafCapture(t *testing.T) {
	all, allPoints, allErrs := captureSeries(t, mustDecoder(t, DecoderConfig{Format: FormatInflux}))
	constant := 0
	for _, vals := range all {
		if len(vals) == 1 {
			constant++
		}
	}
	if len(all) != 100 || constant != 36 || allErrs[ReasonUnsupportedFieldType] == 0 {
		t.Fatalf("capture without a filter: %d series, %d constant, errors %v; want 100, 36, uptime_format refused", len(all), constant, allErrs)
	}

	drop := []string{"usage_guest*", "usage_irq", "usage_nice", "total", "*_total", "{high,low}_*", "huge_page*",
		"swap_*", "vmalloc_chunk", "write_back_tmp", "commit_limit", "shared", "drop_*", "err_*", "speed", "n_cpus", "uptime_format"}
	ff, err := NewFieldFilter(nil, drop)
	if err != nil {
		t.Fatal(err)
	}
	kept, keptPoints, keptErrs := captureSeries(t, mustDecoder(t, DecoderConfig{Format: FormatInflux, Fields: ff}))
	var left uint64
	for k, vals := range all {
		if _, ok := kept[k]; ok {
			continue
		}
		if len(vals) != 1 {
			t.Errorf("series %q, not constant, was left out", k)
		}
		left += uint64(allPoints[k])
	}
	left += uint64(allErrs[ReasonUnsupportedFieldType]) // uptime_format, a field of its own line
	for k, vals := range kept {
		if len(vals) == 1 {
			t.Errorf("constant series %q kept", k)
		}
		if keptPoints[k] != allPoints[k] {
			t.Errorf("series %q: %d points, want %d", k, keptPoints[k], allPoints[k])
		}
	}
	if len(kept) != 64 || len(keptErrs) != 0 || ff.Dropped() != left {
		t.Fatalf("with fielddrop: %d series, errors %v, %d fields counted dropped; want 64, none, %d", len(kept), keptErrs, ff.Dropped(), left)
	}

	// fieldpass alone.
	ff, err = NewFieldFilter([]string{"usage_idle", "*_percent"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kept, _, _ = captureSeries(t, mustDecoder(t, DecoderConfig{Format: FormatInflux, Fields: ff}))
	var keys []string
	for k := range kept {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{
		"cpu,cpu=cpu-total,host=capture usage_idle", "cpu,cpu=cpu0,host=capture usage_idle", "cpu,cpu=cpu1,host=capture usage_idle",
		"disk,device=vda,fstype=ext4,host=capture,mode=rw,path=/ inodes_used_percent",
		"disk,device=vda,fstype=ext4,host=capture,mode=rw,path=/ used_percent",
		"mem,host=capture available_percent", "mem,host=capture used_percent",
	}
	if fmt.Sprint(keys) != fmt.Sprint(want) {
		t.Fatalf("with fieldpass: series\n%q\nwant\n%q", keys, want)
	}
}

// A payload whose every field is left out decodes to no point and no
// error; the other fields of a line are kept.
func TestFieldFilterPayload(t *testing.T) {
	ff, err := NewFieldFilter(nil, []string{"b*"})
	if err != nil {
		t.Fatal(err)
	}
	dec := mustDecoder(t, DecoderConfig{Format: FormatInflux, Fields: ff})
	pts, err := dec.Decode(nil, "s", []byte("m b=1,bs=\"str\",bb=true 1\nm b=2 2\n"), time.Time{})
	if len(pts) != 0 || err != nil || ff.Dropped() != 4 {
		t.Fatalf("all left out: %v, %v, dropped %d", pts, err, ff.Dropped())
	}
	pts, err = dec.Decode(nil, "s", []byte("m,h=x a=1,b=2,c=3i 3\n"), time.Time{})
	if err != nil || len(pts) != 2 || pts[0].Key != "m,h=x a" || pts[1].Key != "m,h=x c" || ff.Dropped() != 5 {
		t.Fatalf("some left out: %+v, %v, dropped %d", pts, err, ff.Dropped())
	}
}

// Through a Source and a real nats-server: Telegraf's lines published on
// "telegraf", the fields fielddrop names make no point, and are counted.
func TestSourceFieldFilter(t *testing.T) {
	t.Parallel()
	ns := runServer(t, -1, t.TempDir())
	ff, err := NewFieldFilter(nil, []string{"usage_*", "uptime_format"})
	if err != nil {
		t.Fatal(err)
	}
	s := newSource(t, Config{Servers: []string{ns.ClientURL()}, Subjects: []string{"telegraf"},
		Decoder: DecoderConfig{Format: FormatInflux, MaxPast: -1, MaxFuture: -1, Fields: ff}})
	eventually(t, "the source connected", func() bool { return s.Stats().Connected })
	nc := connect(t, ns)
	// The capture's first 12 lines (net, system ×3, mem, disk, diskio,
	// cpu ×3, …) in one message, as Telegraf's NATS output batches them.
	f, err := os.ReadFile("../testdata/telegraf/capture.lp")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(f), "\n")[:12]
	payload := strings.Join(lines, "")
	if err := nc.Publish("telegraf", []byte(payload)); err != nil {
		t.Fatal(err)
	}
	m := next(t, s)
	want, _ := captureLines(t, payload, nil)
	for _, p := range m.Points {
		if strings.Contains(p.Key, " usage_") {
			t.Errorf("series %q not left out", p.Key)
		}
	}
	// uptime_format, dropped, is refused without a filter: not in want.
	if m.Err != nil || len(m.Points) != want-int(ff.Dropped())+1 {
		t.Fatalf("%d points, err %v; %d fields dropped, %d points without a filter", len(m.Points), m.Err, ff.Dropped(), want)
	}
	if ff.Dropped() == 0 {
		t.Fatal("nothing dropped")
	}
	for r, n := range s.Stats().ParseErrors {
		if n != 0 {
			t.Errorf("%d parse errors %s", n, r)
		}
	}
	// A message every field of which is left out is filtered, not
	// refused: nothing delivered, nothing counted as bad input.
	if err := nc.Publish("telegraf", []byte("cpu,cpu=cpu0 usage_idle=99,usage_user=1 1795384479000000000\n")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the filtered message counted", func() bool { return s.Stats().Filtered == 1 })
	if st := s.Stats(); st.Refused != 0 || st.Delivered != 1 {
		t.Errorf("after a wholly filtered message: refused %d, delivered %d; want 0, 1", st.Refused, st.Delivered)
	}
}

// captureLines decodes payload (no filter if ff is nil) and returns its
// number of points and parse errors.
func captureLines(t *testing.T, payload string, ff *FieldFilter) (points, errs int) {
	t.Helper()
	pts, err := mustDecoder(t, DecoderConfig{Format: FormatInflux, Fields: ff}).Decode(nil, "telegraf", []byte(payload), time.Time{})
	EachParseError(err, func(*ParseError) { errs++ })
	return len(pts), errs
}
