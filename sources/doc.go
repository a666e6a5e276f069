// Package sources is forecastd's input: it reads points from NATS (core
// subscriptions or a durable JetStream consumer), or from recordings
// (Replay), and decodes their payloads into keyed points, one per series.
//
// # Decoders
//
// A [Decoder] is a pure decoder for one `data_format`, with no NATS and no
// wall clock: [Decoder.Decode] takes the subject, the payload and a
// receive time and appends [KeyedPoint] values. A format is a [Format],
// registered with [RegisterFormat] by a [FormatKind] (its name, a line
// of doc for the configuration reference, whether its points are fields
// of a measurement, and its Decode); nothing else switches on a format.
// The built-in formats:
//
//   - "json" ([FormatJSON]): {"time": …, "value": …, "series": "optional"}
//     or an array of such objects. "time" is an RFC 3339 string or a
//     Unix number in the unit `json_time_format` names ([TimeFormat]:
//     unix, unix_ms, unix_us, unix_ns).
//   - "influx" ([FormatInflux]): InfluxDB line protocol as Telegraf's NATS
//     output sends it, parsed by github.com/influxdata/line-protocol/v2;
//     every float, integer and unsigned field of every line is a point.
//     Timestamps are nanoseconds unless DecoderConfig.InfluxPrecision
//     says otherwise. Its points are fields (FormatKind.Fields), which
//     DecoderConfig.Fields selects.
//   - "value" ([FormatValue]): a bare number.
//
// Another format is one file and one call: a FormatKind whose Decode
// parses the payload and hands each point to [Decoder.AppendPoint],
// which applies the decoder's bounds, time window and key cache (so that
// a known series decodes without allocating), with [Decoder.ParseValue]
// and [Decoder.KeepField] for numbers and field filters; it reports what
// it refuses as [*ParseError] values with the existing [Reason]s.
// RegisterFormat is called from an init function; `data_format` then
// accepts its name, and the configuration reference lists it.
//
// A payload without a time takes the receive time, and the point is
// marked NoTime.
//
// # Series keys
//
// json and value: the NATS subject, verbatim: a message on `sensors.t1`
// is the series "sensors.t1". A json object's "series", when present,
// names a series of its subject: the key is the subject, a space and the
// field ("sensors.t1 cpu"), so that a publisher on one subject cannot
// write into another subject's series (a subject holds no space);
// with DecoderConfig.SeriesAcrossSubjects the field alone is the key.
//
// influx: InfluxDB's series key (measurement, then the tags sorted by key
// bytes, comma-separated) followed by a space and the field key:
//
//	<measurement>[,<tag key>=<tag value>]… <field key>
//
// e.g. "cpu,cpu=cpu-total,host=a usage_idle". Parts keep line protocol's
// escapes: a backslash before ',' and ' ' in the measurement, and before
// ',', '=' and ' ' in tag keys, tag values and the field key, so
// `cpu,host=my\ host usage\=x` is the field "usage=x" of measurement
// "cpu" with tag host="my host". KeyedPoint also carries the unescaped
// Measurement, Field and sorted Tags, so a sink can write the source tags.
//
// # Refusals
//
// Bad input is refused, never fatal, and never reaches a model: every
// refusal is a [*ParseError] with a [Reason] (its String is the
// `parse_errors_total{reason}` label: invalid_json,
// invalid_line_protocol, invalid_value, missing_value, non_finite,
// bad_time, out_of_range_time, unsupported_field_type, too_large, empty,
// missing_series, key_too_long, too_many_points, subject_too_long,
// invalid_key) and a message naming what was wrong and what to do, every
// value quoted from the payload cut to 64 bytes with its length. Parts of
// a payload are refused independently (a JSON array element, a line, a
// string or boolean field), so one decode may return points and a
// [ParseErrors] list; [EachParseError] walks either. Accepted values are
// always finite; accepted times lie between pipeline.MinTime and MaxTime
// (the times the pipeline and the sinks compute with, in int64
// nanoseconds) and within DecoderConfig's MaxPast/MaxFuture window around
// the receive time; accepted keys are those pipeline.CheckKey accepts (no
// control character, no backslash at the end, no '@' and a duration at
// the end, which names a resolution's series), so that every encoding of
// a key (state file, InfluxDB tag, message id) is injective.
//
// # Bounds
//
// Everything a publisher controls is bounded (DecoderConfig): the payload
// (MaxPayload), the points one payload yields (MaxPoints, and so the
// series one message can create), a series key (MaxKeyLen), and the
// decoder's key cache, in entries and bytes (MaxKeys, MaxKeyBytes), which
// holds only keys of accepted points.
//
// # NATS
//
// [New] connects (retrying for ever in the background) and starts
// reading; [Source.Messages] delivers each message's points on a bounded
// channel, or [Config].Deliver is given each message on the goroutine
// that read it (the daemon's way: one hop less per point). A message no
// point of which decodes is not delivered; it is counted in [Stats] and,
// under JetStream, terminated. Wiring it:
//
//	src, err := sources.New(sources.Config{
//		Servers:    cfg.NATS.Servers,           // [nats] servers
//		Subjects:   cfg.Input.Subjects,         // [input] subjects
//		QueueGroup: cfg.Input.QueueGroup,       // [input] queue_group
//		Decoder: sources.DecoderConfig{
//			Format:         format,             // sources.ParseFormat(data_format)
//			JSONTimeFormat: timeFormat,         // sources.ParseTimeFormat(json_time_format)
//		},
//		JetStream: js, // nil, or &sources.JetStreamConfig{Stream: …, Durable: …} from [input.jetstream]
//		Logger:    logger,
//	})
//	…
//	for m := range src.Messages() {        // ends after StopIntake
//		for _, p := range m.Points {
//			shard(p.Key) <- work{msg: m, point: p}
//		}
//	}
//	// In each shard, once a point's forecast was accepted by the sinks
//	// (or the point was skipped): w.msg.Done(err). The last Done of a
//	// message acks it (or naks it if a point failed). Core messages
//	// ignore Done.
//
//	// Shutdown, under one deadline:
//	src.StopIntake(ctx) // no new input; Messages closes
//	// drain the shards, flush the sinks: the last acks go out
//	src.Close(ctx)      // drain the connection, flushing the acks
//
// Under JetStream every message must be acked within AckWait of its
// delivery, or it is redelivered (up to MaxDeliver times, waiting
// BackOff between attempts); [Message.Sequence] is its stream sequence,
// the same on every redelivery, so a consumer can skip points it has
// already applied. Messages whose ack was lost are redelivered too: the
// input is at least once.
//
// The Source owns the durable consumer's whole life: it creates it (or
// keeps an existing one, with its deliver policy), recreates it when it
// is lost, reports its ack floor ([Source.AckFloor]) for the caller's
// checkpoints and, given the position those checkpoints cover
// ([JetStreamConfig.Checkpointed]), resets it at start to deliver again
// what was acknowledged but not checkpointed, and acknowledges without
// delivering what the checkpoints cover.
//
// # Replay
//
// A [Replay] delivers recorded input (files of line protocol or other
// payloads, one a line, or points already read) as [Message] values, with
// the same decoders and the same methods as a Source, then closes its
// channel: `forecastd replay` runs it through the daemon's path.
// [ReadCSV] reads a recorded series from a CSV file, as replay and the
// backtest take it.
package sources
