package main

import (
	"fmt"

	"github.com/forecastd/forecastd/sources"
)

// fieldFilterErrors returns the problems of [input] fieldpass and
// fielddrop, each naming its key: an invalid glob, or either set with a
// data_format other than influx (only line protocol has fields).
func fieldFilterErrors(in InputConfig) []error {
	if len(in.FieldPass) == 0 && len(in.FieldDrop) == 0 {
		return nil
	}
	var errs []error
	if in.DataFormat.Format() != sources.FormatInflux {
		for _, k := range []struct {
			key string
			set bool
		}{{"fieldpass", len(in.FieldPass) > 0}, {"fielddrop", len(in.FieldDrop) > 0}} {
			if k.set {
				errs = append(errs, fmt.Errorf("input.%s: applies to data_format = \"influx\" only (line-protocol fields), not %q", k.key, in.DataFormat))
			}
		}
	}
	if _, err := sources.NewFieldFilter(in.FieldPass, in.FieldDrop); err != nil {
		for _, e := range unjoin(err) {
			errs = append(errs, fmt.Errorf("input.%w", e))
		}
	}
	return errs
}

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
