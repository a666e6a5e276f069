package sinks

import (
	"strconv"

	"github.com/forecastd/forecastd/anomaly"
)

// writeAnomaly publishes the anomaly event an outcome opened or closed,
// if any, as a JSON message:
//
//	subject  <SubjectPrefix>.anomaly.<input subject>[.<measurement>.<field>]
//	header   Nats-Msg-Id: <series>@<time>#<state>
//	body     {"series":"cpu","model":"aosvr",
//	          "time":"2024-05-01T12:00:10.000000000Z",
//	          "y":0.93,"yhat":0.42,"yhat_lower":0.40,"yhat_upper":0.44,
//	          "score":25.5,"direction":"above","state":"opened","extreme":false,
//	          "seasonal":false}
//
// "time" is the time of the point that opened or closed the event, "score"
// its anomaly score (see anomaly.Score; null when not finite) and
// "direction" the side of the forecast it fell on ("above", "below", or
// "both" on the forecast itself); "extreme" is true when the point was a
// new high or low of the series after a quiet period (anomaly.Config's
// ExtremeQuiet), which opens an event whatever its score; "seasonal" is
// true when the point ended a run of points far from the series' values a
// day or a week before (anomaly.Config's Seasonal), which also opens one
// whatever its score. Outcomes that neither open nor close an event
// publish nothing. O(length of the message); no allocation but the
// client's.
func (s *NATS) writeAnomaly(r *Record) error {
	a := &r.Outcome.Anomaly
	if a.Event == anomaly.None {
		return nil
	}
	if s.closed.Load() {
		return ErrClosed
	}
	sc := s.pool.Get().(*natsScratch)
	defer s.pool.Put(sc)

	sc.body = appendAnomalyJSON(sc.body[:0], r)
	sc.subj = appendSubject(append(sc.subj[:0], s.prefix...), infixAnomaly, r)
	sc.id = append(appendMsgID(sc.id[:0], r.Series, r.Step, r.Outcome.Time), '#')
	sc.id = append(sc.id, a.Event.String()...)
	if err := s.publish(sc, "publish anomaly"); err != nil {
		return err
	}
	s.anomalies.Add(1)
	return nil
}

// appendAnomalyJSON appends the JSON body of an outcome's anomaly event.
func appendAnomalyJSON(b []byte, r *Record) []byte {
	o := &r.Outcome
	b = append(b, `{"series":`...)
	b = appendJSONString(b, r.Series)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, r.Model)
	b = append(b, `,"time":"`...)
	b = appendTime(b, o.Time)
	b = append(b, `","y":`...)
	b = appendJSONFloat(b, o.Actual)
	b = append(b, `,"yhat":`...)
	b = appendJSONFloat(b, o.Forecast.Value)
	b = append(b, `,"yhat_lower":`...)
	b = appendJSONFloat(b, o.Forecast.Lower)
	b = append(b, `,"yhat_upper":`...)
	b = appendJSONFloat(b, o.Forecast.Upper)
	b = append(b, `,"score":`...)
	b = appendJSONFloat(b, o.Anomaly.Score)
	b = append(b, `,"direction":"`...)
	b = append(b, o.Anomaly.Side.String()...)
	b = append(b, `","state":"`...)
	b = append(b, o.Anomaly.Event.String()...)
	b = append(b, `","extreme":`...)
	b = strconv.AppendBool(b, o.Anomaly.Extreme)
	b = append(b, `,"seasonal":`...)
	b = strconv.AppendBool(b, o.Anomaly.Seasonal)
	return append(b, '}')
}
