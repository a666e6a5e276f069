package main

import (
	"fmt"

	"github.com/forecastd/forecastd/sinks"
	"github.com/forecastd/forecastd/sources"
)

// decoderConfig is the decoder configuration of [input]: data_format,
// json_time_format, max_payload, fieldpass and fielddrop (whose globs are
// compiled here; their errors are Validate's too).
func decoderConfig(in InputConfig) (sources.DecoderConfig, error) {
	dc := sources.DecoderConfig{Format: in.DataFormat.Format(), JSONTimeFormat: in.JSONTimeFormat.F, MaxPayload: in.MaxPayload}
	if len(in.FieldPass) > 0 || len(in.FieldDrop) > 0 {
		f, err := sources.NewFieldFilter(in.FieldPass, in.FieldDrop)
		if err != nil {
			return dc, fmt.Errorf("input: %w", err)
		}
		dc.Fields = f
	}
	inputLimits(&dc, in)
	return dc, nil
}

// inputLimits sets the decoder's bounds from [input] (validated):
// max_past "0s" is no bound; an absent key keeps the decoder's default.
func inputLimits(dc *sources.DecoderConfig, in InputConfig) {
	if in.MaxPast.IsSet() {
		if dc.MaxPast = in.MaxPast.D; dc.MaxPast == 0 {
			dc.MaxPast = -1
		}
	}
	dc.MaxFuture = in.MaxFuture.D
	dc.MaxKeyLen, dc.MaxPoints = in.MaxKeyLen, in.MaxPoints
	dc.SeriesAcrossSubjects = in.SeriesAcrossSubjects
}

// outputSubjects has the decoder refuse, at intake, a point whose
// forecasts the NATS output could not publish: their subject would be
// longer than sinks.MaxSubjectLen, and nats-server closes the connection
// of a client that sends one (subject_too_long).
func outputSubjects(dc *sources.DecoderConfig, cfg *Config) {
	prefix := cfg.Output.NATS.SubjectPrefix
	dc.OutputSubjectLen = func(subject, measurement, field string) int {
		return sinks.SubjectLen(prefix, subject, measurement, field)
	}
	dc.MaxOutputSubjectLen = sinks.MaxSubjectLen
}
