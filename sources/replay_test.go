package sources

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReplay reads a recording of line protocol with a comment, a bad
// line, a line without a timestamp and an overlong line, then a
// recording of points: the good points come in order with their recorded
// times, each refused line is counted by its reason, and Done's outcomes
// are counted.
func TestReplay(t *testing.T) {
	lp := strings.Join([]string{
		"# a comment",
		"cpu,host=a usage=1 1000000000",
		"",
		"cpu,host=a usage=oops 2000000000",
		"cpu,host=a usage=3",
		"cpu,host=a usage=4,idle=96 4000000000",
		"cpu,host=a usage=5 " + strings.Repeat("9", 200),
		"cpu,host=a usage=6 6000000000",
	}, "\n")
	pts := []KeyedPoint{{Key: "csv", Time: time.Unix(10, 0), Value: 10}, {Key: "csv", Time: time.Unix(11, 0), Value: 11}, {Key: "csv", Time: time.Unix(12, 0), Value: 12}}
	r, err := NewReplay(ReplayConfig{
		Recordings: []Recording{{Name: "a.lp", Subject: "telegraf", Reader: strings.NewReader(lp)}, {Name: "b.csv", Subject: "replay", Points: pts}},
		Decoder:    DecoderConfig{Format: FormatInflux},
		Batch:      2,
		MaxLine:    100,
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	failNext := true
	for m := range r.Messages() {
		for _, p := range m.Points {
			got = append(got, m.Subject+" "+p.Key+" "+p.Time.UTC().Format(time.TimeOnly)+" "+strconv.FormatFloat(p.Value, 'f', -1, 64))
		}
		for range m.Points {
			var err error
			if failNext {
				err, failNext = context.Canceled, false
			}
			m.Done(err)
		}
	}
	want := []string{
		"telegraf cpu,host=a usage 00:00:01 1",
		"telegraf cpu,host=a usage 00:00:04 4",
		"telegraf cpu,host=a idle 00:00:04 96",
		"telegraf cpu,host=a usage 00:00:06 6",
		"replay csv 00:00:10 10",
		"replay csv 00:00:11 11",
		"replay csv 00:00:12 12",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("replayed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	st := r.Stats()
	if st.Refused != 3 || st.ParseErrors[ReasonInvalidValue]+st.ParseErrors[ReasonInvalidLineProtocol] != 1 ||
		st.ParseErrors[ReasonBadTime] != 1 || st.ParseErrors[ReasonTooLarge] != 1 {
		t.Fatalf("refused %d, parse errors %v; want 3: a bad value, no time, too long", st.Refused, st.ParseErrors)
	}
	if st.Delivered != 5 || st.Points != 7 || st.Naked != 1 || st.Acked != 4 {
		t.Fatalf("delivered %d messages, %d points, %d acked, %d with a failure; want 5, 7, 4, 1", st.Delivered, st.Points, st.Acked, st.Naked)
	}
	if err := r.Close(context.Background()); err != nil || r.Err() != nil {
		t.Fatalf("Close: %v, Err: %v", err, r.Err())
	}
}

// TestReplayStopIntake: stopping a replay that nobody reads closes its
// channel without reading further.
func TestReplayStopIntake(t *testing.T) {
	lines := strings.Repeat("x v=1 1000000000\n", 100)
	r, err := NewReplay(ReplayConfig{Recordings: []Recording{{Name: "x.lp", Subject: "s", Reader: strings.NewReader(lines)}},
		Decoder: DecoderConfig{Format: FormatInflux}, Buffer: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := r.StopIntake(ctx); err != nil {
		t.Fatal(err)
	}
	n := 0
	for range r.Messages() {
		n++
	}
	if n > 1 || r.Stats().Dropped != 1 {
		t.Fatalf("%d messages after StopIntake, %d dropped; want at most the buffered one, 1 dropped", n, r.Stats().Dropped)
	}
}

func TestReplayValidates(t *testing.T) {
	if _, err := NewReplay(ReplayConfig{Recordings: []Recording{{Name: "x"}}}); err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Fatalf("a recording without Reader or Points: %v", err)
	}
}

// FuzzReplay feeds arbitrary bytes to a Replay in each format, with a
// short line limit: it never panics, every point it delivers has a time,
// and every line read is accounted for once (delivered, refused or
// filtered).
func FuzzReplay(f *testing.F) {
	f.Add([]byte("cpu,host=a usage=1 1000000000\n# c\n\ncpu usage=2\n"), uint8(0))
	f.Add([]byte(`{"time": 1, "value": 2}`+"\n"+`[{"time": 2, "value": 3}, {"value": 4}]`), uint8(1))
	f.Add([]byte("1.5\nx\n"+strings.Repeat("9", 300)), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		format := []Format{FormatInflux, FormatJSON, FormatValue}[int(which)%3]
		r, err := NewReplay(ReplayConfig{
			Recordings: []Recording{{Name: "f", Subject: "s", Reader: strings.NewReader(string(data))}},
			Decoder:    DecoderConfig{Format: format},
			MaxLine:    128,
		})
		if err != nil {
			t.Fatal(err)
		}
		for m := range r.Messages() {
			for _, p := range m.Points {
				if p.NoTime {
					t.Fatalf("a point without a time delivered: %+v", p)
				}
				m.Done(nil)
			}
		}
		st := r.Stats()
		if st.Received != st.Delivered+st.Refused+st.Filtered+st.Dropped {
			t.Fatalf("%d lines read, %d delivered, %d refused, %d filtered, %d dropped", st.Received, st.Delivered, st.Refused, st.Filtered, st.Dropped)
		}
		if st.Acked != st.Delivered {
			t.Fatalf("%d delivered, %d settled", st.Delivered, st.Acked)
		}
		if err := r.Close(context.Background()); err != nil || r.Err() != nil {
			t.Fatalf("Close %v, Err %v", err, r.Err())
		}
	})
}
