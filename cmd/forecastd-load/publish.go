package main

import (
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
)

// publisher formats and publishes points; one goroutine owns it.
type publisher struct {
	nc     *nats.Conn
	format string
	rng    *rand.Rand
	buf    []byte
}

// value is the k-th value of a series: a noisy sine of period 40 points
// between about 30 and 70 (the daemon's config can use scale =
// "fixed:0,100").
func (p *publisher) value(k int, phase float64) float64 {
	v := 50 + 20*math.Sin(2*math.Pi*float64(k)/40+phase) + 2*p.rng.NormFloat64()
	return math.Round(v*1000) / 1000
}

// publish sends the k-th point of series i, whose data time is t (Unix ns):
//
//	json    {"time":"2026-11-22T03:30:27.123456789Z","value":51.234}
//	influx  load,series=s00001 value=51.234 1795318227123456789
//	value   51.234 (no time: the daemon stamps its receive time)
func (p *publisher) publish(subject string, i, k int, phase float64, t int64) error {
	v := p.value(k, phase)
	b := p.buf[:0]
	switch p.format {
	case formatJSON:
		b = append(b, `{"time":"`...)
		b = time.Unix(0, t).UTC().AppendFormat(b, timeLayout)
		b = append(b, `","value":`...)
		b = strconv.AppendFloat(b, v, 'f', -1, 64)
		b = append(b, '}')
	case formatInflux:
		b = append(b, "load,series=s"...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, " value="...)
		b = strconv.AppendFloat(b, v, 'f', -1, 64)
		b = append(b, ' ')
		b = strconv.AppendInt(b, t, 10)
	default:
		b = strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	p.buf = b
	return p.nc.Publish(subject, b)
}

// quantile returns the q-quantile (nearest rank) of the sorted ns values,
// in milliseconds; 0 for none.
func quantile(sorted []int64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	k = min(max(k, 0), len(sorted)-1)
	return float64(sorted[k]) / 1e6
}
