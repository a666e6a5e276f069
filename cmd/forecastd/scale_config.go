package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/forecastd/forecastd/internal/partition"
)

// [state] store's values.
const (
	storeDir       = "dir"
	storeJetStream = "jetstream"
)

// scaleErrors are the problems of [state] store and [input.jetstream]
// partitions, each naming its key.
func scaleErrors(c *Config) []error {
	var errs []error
	bad := func(key string, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	st := c.State
	switch st.Store {
	case "", storeDir, storeJetStream:
	default:
		bad("state.store", "want %q or %q, got %q", storeDir, storeJetStream, st.Store)
	}
	kv := st.Store == storeJetStream
	js := c.Input.JetStream
	parts := 0
	if js != nil {
		parts = js.Partitions
	}
	if kv && parts == 0 {
		bad("state.store", `"jetstream" needs [input.jetstream] with partitions ≥ 1 and partition_subject`)
	}
	for _, b := range []struct{ key, name string }{{"state.bucket", st.Bucket}, {"state.lease_bucket", st.LeaseBucket}} {
		if b.name != "" && !partition.ValidBucket(b.name) {
			bad(b.key, "invalid bucket name %q: letters, digits, '-' and '_' only", b.name)
		}
	}
	if st.Bucket != "" && st.Bucket == st.LeaseBucket {
		bad("state.lease_bucket", "must differ from state.bucket (%q): the leases expire, the states must not", st.Bucket)
	}
	if st.LeaseTTL.IsSet() && st.LeaseTTL.D < time.Second {
		bad("state.lease_ttl", "must be at least 1s, got %q", st.LeaseTTL.Text)
	}
	if st.Replicas < 0 || st.Replicas > 5 {
		bad("state.replicas", "must be between 1 and 5, got %d", st.Replicas)
	}
	if strings.IndexFunc(st.Instance, isSpaceOrControl) >= 0 {
		bad("state.instance", "invalid name %q: a space or control character", st.Instance)
	}
	if js == nil {
		return errs
	}
	switch {
	case js.Partitions < 0 || js.Partitions > partition.MaxPartitions:
		bad("input.jetstream.partitions", "must be between 0 and %d, got %d", partition.MaxPartitions, js.Partitions)
	case js.Partitions > 0 && !kv:
		bad("input.jetstream.partitions", `needs [state] store = "jetstream" (the leases and states of the partitions)`)
	case js.Partitions > 0 && strings.Count(js.PartitionSubject, partition.Token) != 1:
		bad("input.jetstream.partition_subject", "must contain %q once (a partition's filter subject, as the server's mapping names it), got %q", partition.Token, js.PartitionSubject)
	case js.Partitions > 0:
		if err := checkSubject(partition.Subject(js.PartitionSubject, 0), true); err != nil {
			bad("input.jetstream.partition_subject", "invalid subject %q: %v", js.PartitionSubject, err)
		}
	}
	if js.MaxPartitions < 0 || js.Partitions > 0 && js.MaxPartitions > js.Partitions {
		bad("input.jetstream.max_partitions", "must be between 0 (all) and partitions (%d), got %d", js.Partitions, js.MaxPartitions)
	}
	return errs
}
