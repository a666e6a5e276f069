package main

import (
	"fmt"

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
