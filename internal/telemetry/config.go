package telemetry

import (
	"fmt"
	"net"
)

// HTTPConfig is [http]: where Server listens.
type HTTPConfig struct {
	Listen string `toml:"listen" doc:"address of /metrics, /-/healthy and /-/ready, like \"127.0.0.1:9470\"; empty: no HTTP"`
}

// WithDefaults returns c, whose zero value is the default (no HTTP).
func (c HTTPConfig) WithDefaults() HTTPConfig { return c }

// Validate returns the problem of listen, naming its key.
func (c HTTPConfig) Validate() error {
	if c.Listen == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("listen: %v", err)
	}
	return nil
}
