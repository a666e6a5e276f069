package sinks

import (
	"testing"
	"time"
)

// BenchmarkPromEncode: the remote write encoder's throughput on batches
// of the default size (2 000 records: forecasts with bounds and their
// outcomes, of 1 000 series with two tags each, a tenth with a path of
// 3), from records to the snappy-compressed WriteRequest.
func BenchmarkPromEncode(b *testing.B) {
	recs, _ := promBatch(1000, 1, time.UnixMilli(1_700_000_000_000))
	var batch []Record
	for _, r := range recs {
		r.steps(func(q Record) { batch = append(batch, q) })
		if r.Kind == KindForecast {
			for _, o := range r.Forecast.Thresholds {
				batch = append(batch, thresholdRecord(r, o))
			}
		}
	}
	e := newPromEncoder(DefaultPromMaxLabels, DefaultPromMaxLabelLength)
	var bytes int
	b.ReportAllocs()
	for b.Loop() {
		for i := range batch {
			e.add(&batch[i])
		}
		bytes = len(e.encode())
	}
	b.ReportMetric(float64(len(batch))*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(bytes), "bytes/batch")
}
