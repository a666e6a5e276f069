package runner

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/svr"
)

// ShedColumns makes the shards' idle AOSVR models give up the kernel
// columns they keep (asked for more than they hold, the process's column
// cache falls back to what it held before them), and the series go on
// forecasting.
func TestRunnerShedColumns(t *testing.T) {
	old := svr.ColumnCache().Limit
	svr.SetColumnCache(1 << 30)
	defer svr.SetColumnCache(old)
	base := svr.ColumnCache().Bytes
	rc := newRecorder()
	cfg := pipeline.DefaultConfig()
	cfg.Window = 20
	r, err := NewRunner(RunnerConfig{Shards: 2, MaxSeries: 100, Default: cfg, Outputs: rc})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	submit := func(key string, i int) {
		t.Helper()
		errc := make(chan error, 1)
		v := 10*math.Sin(float64(i)/2+float64(len(key))) + float64(i%7)
		if err := r.Submit(context.Background(), Input{Key: key, Point: pipeline.Point{Time: time.Unix(int64(i), 0), Value: v}, Msg: &ack{rc: rc, key: key, errc: errc}}); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != nil {
			t.Fatalf("series %s: %v", key, err)
		}
	}
	const series, points = 20, 80
	for i := range points {
		for k := range series {
			submit(fmt.Sprintf("k%d", k), i)
		}
	}
	held := svr.ColumnCache().Bytes
	if held <= base {
		t.Fatalf("the warm models keep no columns: the cache holds %d, %d before them", held, base)
	}
	// More than they hold: each shard's share covers its models'.
	r.ShedColumns(2 * held)
	poll(t, "the columns given up", func() bool { return svr.ColumnCache().Bytes <= base })
	for k := range series {
		key := fmt.Sprintf("k%d", k)
		before := len(rc.events(key))
		submit(key, points)
		if len(rc.events(key)) == before {
			t.Errorf("%s: no forecast after the shed", key)
		}
	}
}
