package sinks

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(influxtest.Wrap(m))
}
