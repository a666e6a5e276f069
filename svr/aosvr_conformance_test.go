package svr_test

import (
	"testing"

	"github.com/forecastd/forecastd/svr"
	"github.com/forecastd/forecastd/svr/svrtest"
)

func TestAOSVRConformance(t *testing.T) {
	svrtest.Test(t, func(dim int) svr.Regressor {
		m, err := svr.NewAOSVR(svr.AOSVRConfig{Dim: dim, Kernel: svr.RBF{Gamma: 1}, C: 10, Epsilon: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}, 1e-3)
}
