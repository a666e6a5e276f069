// Command burst floods a running forecastd with new series in bursts on
// core NATS while one innocent series, established before, publishes at a
// steady rate, and reports what the innocent series lost (its points
// against its forecasts), what the NATS client and the runner dropped
// (/metrics) and the daemon's peak RSS (/proc/PID/status, sampled every
// 50 ms, and VmHWM): a flood on one subject must not cost another series
// its points, and RSS must stay within 1.15x of memory_budget
// (BENCHMARKS.md, "A flood of new subjects on core NATS").
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

func status(pid, field string) int {
	b, _ := os.ReadFile("/proc/" + pid + "/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field+":") {
			f := strings.Fields(strings.TrimPrefix(l, field+":"))
			n, _ := strconv.Atoi(f[0])
			return n // kB
		}
	}
	return 0
}

func metrics(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func metric(all, name string) string {
	for _, l := range strings.Split(all, "\n") {
		if strings.HasPrefix(l, name+" ") {
			return strings.TrimPrefix(l, name+" ")
		}
	}
	return "0"
}

// options are the command line's.
type options struct {
	n, bursts, points, rate int
	pause                   time.Duration
	format, pid, url, murl  string
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 25000, "new series per burst")
	flag.IntVar(&o.bursts, "bursts", 8, "bursts")
	flag.DurationVar(&o.pause, "pause", 2*time.Second, "pause between bursts")
	flag.IntVar(&o.points, "points", 1, "points per new series in a burst")
	flag.StringVar(&o.format, "format", "json", "json or influx")
	flag.IntVar(&o.rate, "rate", 150, "innocent points per second")
	flag.StringVar(&o.pid, "pid", "", "daemon pid")
	flag.StringVar(&o.url, "nats", "nats://127.0.0.1:4333", "")
	flag.StringVar(&o.murl, "metrics", "http://127.0.0.1:9479/metrics", "")
	flag.Parse()

	flood, err := nats.Connect(o.url)
	if err != nil {
		panic(err)
	}
	in := newInnocent(o)
	var peak atomic.Int64
	stopRSS := make(chan struct{})
	go samplePeak(o.pid, &peak, stopRSS)
	in.start()

	msgs := floodBursts(o, flood, in.t0, &peak)
	// Let the daemon settle: the innocent series goes on for 10 s more.
	time.Sleep(10 * time.Second)
	in.stop()
	want := int64(in.sent - in.offset)
	deadline := time.Now().Add(60 * time.Second)
	for in.forecasts.Load() < want && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	close(stopRSS)
	m := metrics(o.murl)
	fmt.Printf("flood: %d messages, %d series; innocent: %d points, %d forecasts (want %d): lost %d; longest wait between two of its forecasts %v (one point every %v)\n",
		msgs, o.bursts*o.n, in.sent, in.forecasts.Load(), want, want-in.forecasts.Load(), time.Duration(in.maxGap.Load()).Round(time.Millisecond), time.Second/time.Duration(o.rate))
	fmt.Printf("peak VmRSS %d MB (sampled), VmHWM %d MB, VmRSS now %d MB; series_active %s series_limit %s\n",
		peak.Load()/1024, status(o.pid, "VmHWM")/1024, status(o.pid, "VmRSS")/1024,
		metric(m, "forecastd_series_active"), metric(m, "forecastd_series_limit"))
	for _, l := range strings.Split(m, "\n") {
		if strings.HasPrefix(l, "forecastd_points_dropped_total") || strings.HasPrefix(l, "forecastd_messages_dropped") ||
			strings.HasPrefix(l, "forecastd_checkpoint") || strings.HasPrefix(l, "forecastd_series_evicted") {
			fmt.Println(l)
		}
	}
}

// samplePeak keeps in peak the highest VmRSS of pid, sampled every 50 ms
// until stop closes.
func samplePeak(pid string, peak *atomic.Int64, stop <-chan struct{}) {
	for {
		if r := int64(status(pid, "VmRSS")); r > peak.Load() {
			peak.Store(r)
		}
		select {
		case <-stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// innocent is the series established before the flood, published at a
// steady rate, whose forecasts are counted and timed.
type innocent struct {
	o            options
	nc           *nats.Conn
	subj         string
	t0           int64
	sent, offset int
	forecasts    atomic.Int64
	last, maxGap atomic.Int64 // gaps between forecasts' arrivals, ns
	stopc, done  chan struct{}
}

// newInnocent connects the innocent series' publisher, subscribes to its
// forecasts and publishes its warm-up points.
func newInnocent(o options) *innocent {
	nc, err := nats.Connect(o.url)
	if err != nil {
		panic(err)
	}
	in := &innocent{o: o, nc: nc, subj: "flood.innocent", t0: time.Now().Add(-time.Hour).Unix(), stopc: make(chan struct{}), done: make(chan struct{})}
	outSubj := "forecast.flood.innocent"
	if o.format == "influx" {
		in.subj, outSubj = "metrics.innocent", "forecast.metrics.innocent.innocent.v"
	}
	sub, err := nc.Subscribe(outSubj, func(*nats.Msg) {
		in.forecasts.Add(1)
		now := time.Now().UnixNano()
		if l := in.last.Swap(now); l > 0 && now-l > in.maxGap.Load() {
			in.maxGap.Store(now - l)
		}
	})
	if err != nil {
		panic(err)
	}
	sub.SetPendingLimits(-1, -1)
	nc.Flush()
	const warm = 20
	for range warm {
		in.publish()
	}
	nc.Flush()
	time.Sleep(2 * time.Second)
	in.offset = warm - int(in.forecasts.Load()) // points before the first forecast
	return in
}

// publish publishes the innocent series' next point.
func (in *innocent) publish() {
	v := 50 + 10*math.Sin(float64(in.sent)/10)
	var p []byte
	// 10 ms apart: the series stays within the daemon's max_future
	// however long the run.
	at := in.t0*1000 + int64(in.sent)*10 // ms
	if in.o.format == "influx" {
		p = fmt.Appendf(nil, "innocent v=%v %d", v, at*1e6)
	} else {
		p = fmt.Appendf(nil, `{"time":%d.%03d,"value":%v}`, at/1000, at%1000, v)
	}
	in.sent++
	in.nc.Publish(in.subj, p)
}

// start publishes a point every 1/rate until stop.
func (in *innocent) start() {
	go func() {
		defer close(in.done)
		t := time.NewTicker(time.Second / time.Duration(in.o.rate))
		defer t.Stop()
		for {
			select {
			case <-in.stopc:
				return
			case <-t.C:
				in.publish()
			}
		}
	}()
}

func (in *innocent) stop() {
	close(in.stopc)
	<-in.done
	in.nc.Flush()
}

// floodBursts publishes the bursts of new series, reporting after each,
// and returns the messages published.
func floodBursts(o options, flood *nats.Conn, t0 int64, peak *atomic.Int64) int {
	start := time.Now()
	msgs := 0
	for b := range o.bursts {
		for k := range o.points {
			for i := range o.n {
				s := b*o.n + i
				var subj string
				var p []byte
				if o.format == "influx" {
					subj = "metrics.flood"
					p = fmt.Appendf(nil, "m,host=h%07d v=%d %d", s, k, (t0+int64(k))*1e9)
				} else {
					subj = fmt.Sprintf("flood.s%07d", s)
					p = fmt.Appendf(nil, `{"time":%d,"value":%d}`, t0+int64(k), k)
				}
				flood.Publish(subj, p)
				msgs++
			}
		}
		flood.Flush()
		m := metrics(o.murl)
		fmt.Printf("burst %d: %d messages in %.1fs  rss %d MB (peak %d MB)  series_active %s  series_limit %s  slow_consumer %s  queue_full %s\n",
			b+1, msgs, time.Since(start).Seconds(), status(o.pid, "VmRSS")/1024, peak.Load()/1024,
			metric(m, "forecastd_series_active"), metric(m, "forecastd_series_limit"),
			metric(m, `forecastd_messages_dropped_total`), metric(m, `forecastd_points_dropped_total{reason="queue_full"}`))
		time.Sleep(o.pause)
	}
	return msgs
}
