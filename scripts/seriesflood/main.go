// Command seriesflood publishes three points each for -n distinct series
// (subjects load.sNNNNNNN) to a running forecastd and prints the
// daemon's RSS (/proc/PID/status) and its /metrics series counters every
// -every series: how the daemon's memory follows a flood of new series
// (BENCHMARKS.md, "Bounds against hostile publishers").
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

func rss(pid string) string {
	b, _ := os.ReadFile("/proc/" + pid + "/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:"))
		}
	}
	return "?"
}

func metric(url, name string) string {
	resp, err := http.Get(url)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, name+" ") {
			return strings.TrimPrefix(l, name+" ")
		}
	}
	return "?"
}

func main() {
	n := flag.Int("n", 100000, "series")
	every := flag.Int("every", 10000, "report every")
	pid := flag.String("pid", "", "daemon pid")
	url := flag.String("nats", "nats://127.0.0.1:4333", "")
	murl := flag.String("metrics", "http://127.0.0.1:9479/metrics", "")
	flag.Parse()
	nc, err := nats.Connect(*url)
	if err != nil {
		panic(err)
	}
	var base int
	fmt.Sscan(metric(*murl, "forecastd_points_processed_total"), &base)
	t := time.Now().Add(-time.Minute).Unix()
	for i := 1; i <= *n; i++ {
		for k := 0; k < 3; k++ {
			nc.Publish(fmt.Sprintf("load.s%07d", i), fmt.Appendf(nil, `{"time":%d,"value":%d}`, t+int64(k), k))
		}
		if i%*every == 0 {
			nc.Flush()
			for metric(*murl, "forecastd_points_processed_total") != fmt.Sprint(base+3*i) {
				time.Sleep(50 * time.Millisecond)
			}
			fmt.Printf("series sent %7d  rss %s  series_active %s  evicted(max_series) %s\n", i, rss(*pid),
				metric(*murl, "forecastd_series_active"), metric(*murl, `forecastd_series_evicted_total{reason="max_series"}`))
		}
	}
}
