package main

import (
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// onForecast matches a forecast to its point by series (the subject) and
// origin (the point's time). Points of the series older than the origin
// got no forecast: the daemon processes a series in order.
func (l *loader) onForecast(m *nats.Msg) {
	arrival := time.Now()
	i, ok := l.seriesOf(m.Subject)
	origin, okT := parseOrigin(m.Data)
	l.mu.Lock()
	defer l.mu.Unlock()
	if !ok || !okT {
		l.noMatch()
		return
	}
	s := &l.series[i]
	exact := l.cfg.Format != formatValue
	if !exact {
		// No time in the payload: origin is the daemon's receive time.
		// The series' first forecast is of the newest point published
		// before it (the warm-up publishes value points in rounds, each
		// received before the next); later ones are of the oldest
		// point pending.
		if s.pending() == 0 || s.q[s.head].t > origin {
			l.noMatch()
			return
		}
		j := s.head
		for !s.answered && j+1 < len(s.q) && s.q[j+1].t <= origin {
			j++
		}
		origin = s.q[j].t
	}
	for s.pending() > 0 && s.q[s.head].t < origin {
		p := l.pop(s)
		if p.measured {
			l.lost++
		}
		if s.answered {
			l.outstanding--
		}
	}
	if s.pending() == 0 || s.q[s.head].t != origin {
		l.noMatch()
		return
	}
	if l.firstSeq < 0 {
		l.firstSeq = s.n - s.pending()
	}
	p := l.pop(s)
	if s.answered {
		l.outstanding--
	} else {
		s.answered = true
		l.silent--
		l.outstanding += s.pending()
	}
	if p.measured {
		l.forecasts++
		l.lat = append(l.lat, arrival.UnixNano()-p.t)
		l.lastArrival = arrival
	}
	select {
	case l.progress <- struct{}{}:
	default:
	}
}

// noMatch counts a forecast that matched no outstanding point, in the
// warm-up or the measured phase. l.mu is held.
func (l *loader) noMatch() {
	if l.published == 0 {
		l.warmMiss++
		return
	}
	l.unmatched++
}

// seriesOf returns the index of the series whose forecasts arrive on subj
// (ForecastPrefix.SubjectPrefix.sNNNNN; for influx points, the daemon adds
// the line's measurement and field: ….sNNNNN.load.value).
func (l *loader) seriesOf(subj string) (int, bool) {
	if l.cfg.Format == formatInflux {
		subj = strings.TrimSuffix(subj, ".load.value")
	}
	j := strings.LastIndex(subj, ".s")
	if j < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(subj[j+2:])
	if err != nil || n < 0 || n >= len(l.series) {
		return 0, false
	}
	return n, subj[len(l.cfg.ForecastPrefix)+1:] == l.series[n].subject
}
