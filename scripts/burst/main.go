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

func main() {
	n := flag.Int("n", 25000, "new series per burst")
	bursts := flag.Int("bursts", 8, "bursts")
	pause := flag.Duration("pause", 2*time.Second, "pause between bursts")
	points := flag.Int("points", 1, "points per new series in a burst")
	format := flag.String("format", "json", "json or influx")
	rate := flag.Int("rate", 150, "innocent points per second")
	pid := flag.String("pid", "", "daemon pid")
	url := flag.String("nats", "nats://127.0.0.1:4333", "")
	murl := flag.String("metrics", "http://127.0.0.1:9479/metrics", "")
	flag.Parse()

	flood, err := nats.Connect(*url)
	if err != nil {
		panic(err)
	}
	inn, err := nats.Connect(*url)
	if err != nil {
		panic(err)
	}
	innSubj, outSubj := "flood.innocent", "forecast.flood.innocent"
	if *format == "influx" {
		innSubj, outSubj = "metrics.innocent", "forecast.metrics.innocent.innocent.v"
	}
	var forecasts, last, maxGap atomic.Int64 // gaps between forecasts' arrivals, ns
	sub, err := inn.Subscribe(outSubj, func(*nats.Msg) {
		forecasts.Add(1)
		now := time.Now().UnixNano()
		if l := last.Swap(now); l > 0 && now-l > maxGap.Load() {
			maxGap.Store(now - l)
		}
	})
	if err != nil {
		panic(err)
	}
	sub.SetPendingLimits(-1, -1)
	inn.Flush()

	var peak atomic.Int64
	stopRSS := make(chan struct{})
	go func() {
		for {
			if r := int64(status(*pid, "VmRSS")); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stopRSS:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()

	t0 := time.Now().Add(-time.Hour).Unix()
	var sent int
	innocent := func() {
		v := 50 + 10*math.Sin(float64(sent)/10)
		var p []byte
		// 10 ms apart: the series stays within the daemon's max_future
		// however long the run.
		at := t0*1000 + int64(sent)*10 // ms
		if *format == "influx" {
			p = fmt.Appendf(nil, "innocent v=%v %d", v, at*1e6)
		} else {
			p = fmt.Appendf(nil, `{"time":%d.%03d,"value":%v}`, at/1000, at%1000, v)
		}
		sent++
		inn.Publish(innSubj, p)
	}
	const warm = 20
	for range warm {
		innocent()
	}
	inn.Flush()
	time.Sleep(2 * time.Second)
	offset := warm - int(forecasts.Load()) // points before the first forecast
	stopInn := make(chan struct{})
	innDone := make(chan struct{})
	go func() {
		defer close(innDone)
		t := time.NewTicker(time.Second / time.Duration(*rate))
		defer t.Stop()
		for {
			select {
			case <-stopInn:
				return
			case <-t.C:
				innocent()
			}
		}
	}()

	start := time.Now()
	msgs := 0
	for b := range *bursts {
		for k := range *points {
			for i := range *n {
				s := b**n + i
				var subj string
				var p []byte
				if *format == "influx" {
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
		m := metrics(*murl)
		fmt.Printf("burst %d: %d messages in %.1fs  rss %d MB (peak %d MB)  series_active %s  series_limit %s  slow_consumer %s  queue_full %s\n",
			b+1, msgs, time.Since(start).Seconds(), status(*pid, "VmRSS")/1024, peak.Load()/1024,
			metric(m, "forecastd_series_active"), metric(m, "forecastd_series_limit"),
			metric(m, `forecastd_messages_dropped_total`), metric(m, `forecastd_points_dropped_total{reason="queue_full"}`))
		time.Sleep(*pause)
	}
	// Let the daemon settle: the innocent series goes on for 10 s more.
	time.Sleep(10 * time.Second)
	close(stopInn)
	<-innDone
	inn.Flush()
	want := int64(sent - offset)
	deadline := time.Now().Add(60 * time.Second)
	for forecasts.Load() < want && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	close(stopRSS)
	m := metrics(*murl)
	fmt.Printf("flood: %d messages, %d series; innocent: %d points, %d forecasts (want %d): lost %d; longest wait between two of its forecasts %v (one point every %v)\n",
		msgs, *bursts**n, sent, forecasts.Load(), want, want-forecasts.Load(), time.Duration(maxGap.Load()).Round(time.Millisecond), time.Second/time.Duration(*rate))
	fmt.Printf("peak VmRSS %d MB (sampled), VmHWM %d MB, VmRSS now %d MB; series_active %s series_limit %s\n",
		peak.Load()/1024, status(*pid, "VmHWM")/1024, status(*pid, "VmRSS")/1024,
		metric(m, "forecastd_series_active"), metric(m, "forecastd_series_limit"))
	for _, l := range strings.Split(m, "\n") {
		if strings.HasPrefix(l, "forecastd_points_dropped_total") || strings.HasPrefix(l, "forecastd_messages_dropped") ||
			strings.HasPrefix(l, "forecastd_checkpoint") || strings.HasPrefix(l, "forecastd_series_evicted") {
			fmt.Println(l)
		}
	}
}
