package pipeline

import (
	"fmt"
	"strings"

	"github.com/forecastd/forecastd/internal/config/schema"
)

// CacheKeys are [pipeline]'s keys of the AOSVR kind that hold for the
// whole process: how many bytes of kernel columns its models keep between
// calls (svr.SetColumnCache). A model that keeps them does not compute
// them again at its next call that moves θ; one that does not computes the
// same bits, so the key trades memory for CPU and never changes a
// forecast.
type CacheKeys struct {
	KernelCache KernelCache `toml:"kernel_cache" doc:"bytes of AOSVR kernel columns kept between points, like \"1GiB\"; \"0\" keeps none (least memory, most CPU); \"auto\" (default) what memory_budget, or without one half of the host's memory, leaves beside the series"`
}

// KernelCache is kernel_cache's value: "auto", or a size.
type KernelCache struct {
	Auto bool
	schema.ByteSize
}

// UnmarshalText parses "auto" or a size (schema.ByteSize).
func (k *KernelCache) UnmarshalText(t []byte) error {
	if strings.TrimSpace(string(t)) == "auto" {
		*k = KernelCache{Auto: true, ByteSize: schema.ByteSize{Text: string(t)}}
		return nil
	}
	k.Auto = false
	if err := k.ByteSize.UnmarshalText(t); err != nil {
		return fmt.Errorf("%w, or \"auto\"", err)
	}
	return nil
}

// MarshalText returns the text the value was written as.
func (k KernelCache) MarshalText() ([]byte, error) { return []byte(k.Text), nil }

// WithDefaults returns c with its defaults filled in: kernel_cache "auto".
func (c CacheKeys) WithDefaults() CacheKeys {
	if !c.KernelCache.IsSet() {
		c.KernelCache = KernelCache{Auto: true, ByteSize: schema.ByteSize{Text: "auto"}}
	}
	return c
}
