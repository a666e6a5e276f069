package sinks

import (
	"math"
	"strconv"

	"github.com/forecastd/forecastd/anomaly/threshold"
)

// writeThresholds publishes the threshold events of a forecast's
// observations (pipeline.Forecast.Thresholds), if any, each as a JSON
// message:
//
//	subject  <SubjectPrefix>.threshold.<input subject>[.<measurement>.<field>]
//	header   Nats-Msg-Id: <series>[@<step>]@<origin>#<state>#<direction> <threshold>
//	body     {"series":"disk","model":"aosvr","step":"1h",
//	          "time":"2024-05-01T12:00:00.000000000Z",
//	          "threshold":0,"direction":"below","state":"opened",
//	          "eta":"2024-05-02T09:00:00.000000000Z","eta_seconds":75600,
//	          "horizon":21,"probability":0.52,
//	          "yhat":-0.3,"yhat_lower":-6.1,"yhat_upper":5.5}
//
// "time" is the forecast's origin (the time of its last point; with a
// step, the start of its last bucket); "eta" the target time of the first
// step whose probability of being beyond the threshold reaches the
// threshold's (null, as "eta_seconds" and "horizon", when no step does:
// a closed event); "eta_seconds" the time from "time" to "eta";
// "probability" the probability of being beyond at that step (without
// one, at the step of the path closest to the threshold); "yhat",
// "yhat_lower" and "yhat_upper" that step's forecast and interval.
// "step" is there for a series forecast at a step, as in the forecast's
// message. Observations without an event publish nothing. The id tells
// the thresholds of a series apart, and a replay's duplicates from new
// events. It does not allocate but the client's.
func (s *NATS) writeThresholds(sc *natsScratch, r *Record) error {
	for i := range r.Forecast.Thresholds {
		o := &r.Forecast.Thresholds[i]
		if o.Event == threshold.None {
			continue
		}
		sc.body = appendThresholdJSON(sc.body[:0], r, o)
		sc.subj = appendSubject(append(sc.subj[:0], s.prefix...), infixThreshold, r)
		sc.id = append(appendMsgID(sc.id[:0], r.Series, r.Step, r.Forecast.Origin), '#')
		sc.id = append(append(sc.id, o.Event.String()...), '#')
		sc.id = appendThresholdName(sc.id, o)
		if err := s.publish(sc, "publish threshold"); err != nil {
			return err
		}
		s.thresholds.Add(1)
	}
	return nil
}

// appendThresholdName appends "<direction> <value>" ("below 0",
// threshold.Name).
func appendThresholdName(b []byte, o *threshold.Observation) []byte {
	return threshold.AppendName(b, o.Direction, o.Value)
}

// appendThresholdJSON appends the JSON body of a threshold event.
func appendThresholdJSON(b []byte, r *Record, o *threshold.Observation) []byte {
	b = append(b, `{"series":`...)
	b = appendJSONString(b, r.Series)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, r.Model)
	if r.Step != "" {
		b = append(b, `,"step":`...)
		b = appendJSONString(b, r.Step)
	}
	b = append(b, `,"time":"`...)
	b = appendTime(b, r.Forecast.Origin)
	b = append(b, `","threshold":`...)
	b = appendJSONFloat(b, o.Value)
	b = append(b, `,"direction":"`...)
	b = append(b, o.Direction.String()...)
	b = append(b, `","state":"`...)
	b = append(b, o.Event.String()...)
	b = append(b, `","eta":`...)
	if o.Crossing {
		b = append(b, '"')
		b = appendTime(b, o.At)
		b = append(b, `","eta_seconds":`...)
		b = appendJSONFloat(b, o.ETA.Seconds())
		b = append(b, `,"horizon":`...)
		b = strconv.AppendInt(b, int64(o.Step), 10)
	} else {
		b = append(b, `null,"eta_seconds":null,"horizon":null`...)
	}
	b = append(b, `,"probability":`...)
	b = appendJSONFloat(b, o.Probability)
	b = append(b, `,"yhat":`...)
	b = appendJSONFloat(b, o.Forecast)
	b = append(b, `,"yhat_lower":`...)
	b = appendJSONFloat(b, o.Lower)
	b = append(b, `,"yhat_upper":`...)
	b = appendJSONFloat(b, o.Upper)
	return append(b, '}')
}

// thresholdFields is what a threshold observation's InfluxDB point needs
// of it, in 32 bytes: a Record holds one in every record of the buffer.
type thresholdFields struct {
	eta, prob, value float64 // ETA in seconds (NaN: no crossing), probability, threshold
	dir              uint8   // threshold.Direction; 0: not a threshold record
	event            uint8   // threshold.Event
}

// thresholdRecord returns the record of the forecast r's threshold
// observation o, for InfluxDB: r's labels, without its path and
// observations (owned by the series), what its point needs of o.
func thresholdRecord(r Record, o threshold.Observation) Record {
	r.Forecast.Path, r.Forecast.Thresholds = nil, nil
	eta := math.NaN()
	if o.Crossing {
		eta = o.ETA.Seconds()
	}
	r.thr = thresholdFields{eta: eta, prob: o.Probability, value: o.Value, dir: uint8(o.Direction), event: uint8(o.Event)}
	return r
}
