package config

import "github.com/forecastd/forecastd/sources"

// MaxPayload is the largest [input] max_payload (sources.MaxMaxPayload).
const MaxPayload = sources.MaxMaxPayload
