package partition

import (
	"errors"
	"strings"
	"time"

	"github.com/forecastd/forecastd/internal/config/schema"
	"github.com/forecastd/forecastd/internal/kvstate"
	"github.com/forecastd/forecastd/internal/lease"
	"github.com/forecastd/forecastd/internal/natsconn"
)

// [state] store's values.
const (
	StoreDir       = "dir"
	StoreJetStream = "jetstream"
)

// StoreConfig is [state]'s keys of where the series' states and the
// partitions' leases are kept: in [state] dir, or with store =
// "jetstream" in key-value buckets, one lease per partition
// (PartitionKeys).
type StoreConfig struct {
	Store       string          `toml:"store" doc:"\"dir\", or \"jetstream\": states and partition leases in JetStream key-value buckets"`
	Bucket      string          `toml:"bucket" doc:"the states' bucket"`
	LeaseBucket string          `toml:"lease_bucket" doc:"the leases' bucket"`
	LeaseTTL    schema.Duration `toml:"lease_ttl" doc:"a dead instance's partitions are taken over after this"`
	Replicas    int             `toml:"replicas" doc:"both buckets' replicas (3 on a 3-node cluster; 0: the default)"`
	Instance    string          `toml:"instance" doc:"this instance's name in the leases (default: host name and pid)"`
}

// WithDefaults returns c with its defaults filled in.
func (c StoreConfig) WithDefaults() StoreConfig {
	if c.Store == "" {
		c.Store = StoreDir
	}
	if c.Bucket == "" {
		c.Bucket = kvstate.DefaultBucket
	}
	if c.LeaseBucket == "" {
		c.LeaseBucket = lease.DefaultBucket
	}
	if !c.LeaseTTL.IsSet() {
		c.LeaseTTL = schema.Dur(lease.DefaultTTL)
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	return c
}

// JetStream reports whether the states are kept in JetStream.
func (c StoreConfig) JetStream() bool { return c.Store == StoreJetStream }

// Validate returns every problem of c at once, each naming its key
// relative to [state].
func (c StoreConfig) Validate() error {
	var e schema.Errors
	switch c.Store {
	case "", StoreDir, StoreJetStream:
	default:
		e.Add("store", "want %q or %q, got %q", StoreDir, StoreJetStream, c.Store)
	}
	return errors.Join(e...)
}

// ValidateBuckets returns the problems of c's buckets, lease and
// instance, each naming its key relative to [state].
func (c StoreConfig) ValidateBuckets() error {
	var e schema.Errors
	for _, b := range []struct{ key, name string }{{"bucket", c.Bucket}, {"lease_bucket", c.LeaseBucket}} {
		if b.name != "" && !ValidBucket(b.name) {
			e.Add(b.key, "invalid bucket name %q: letters, digits, '-' and '_' only", b.name)
		}
	}
	if c.Bucket != "" && c.Bucket == c.LeaseBucket {
		e.Add("lease_bucket", "must differ from state.bucket (%q): the leases expire, the states must not", c.Bucket)
	}
	if c.LeaseTTL.IsSet() && c.LeaseTTL.D < time.Second {
		e.Add("lease_ttl", "must be at least 1s, got %q", c.LeaseTTL.Text)
	}
	if c.Replicas < 0 || c.Replicas > 5 {
		e.Add("replicas", "must be between 1 and 5, got %d", c.Replicas)
	}
	if strings.IndexFunc(c.Instance, natsconn.IsSpaceOrControl) >= 0 {
		e.Add("instance", "invalid name %q: a space or control character", c.Instance)
	}
	return errors.Join(e...)
}

// PartitionKeys are [input.jetstream]'s keys of the partitions: the
// stream's subjects split by the server's subject mapping, one consumer
// and one lease per partition held.
type PartitionKeys struct {
	Partitions       int    `toml:"partitions" doc:"number of partitions of the stream's subjects (the server's subject mapping), one consumer and one lease each; 0: one consumer, no leases"`
	PartitionSubject string `toml:"partition_subject" doc:"a partition's filter subject, \"{partition}\" standing for its number"`
	MaxPartitions    int    `toml:"max_partitions" doc:"partitions this instance holds at most (0: all)"`
}

// WithDefaults returns k, whose zero values are the defaults.
func (k PartitionKeys) WithDefaults() PartitionKeys { return k }

// Validate returns every problem of k at once, each naming its key
// relative to [input.jetstream]; store tells whether [state] store is
// "jetstream", which partitions need.
func (k PartitionKeys) Validate(store bool) error {
	var e schema.Errors
	switch {
	case k.Partitions < 0 || k.Partitions > MaxPartitions:
		e.Add("partitions", "must be between 0 and %d, got %d", MaxPartitions, k.Partitions)
	case k.Partitions > 0 && !store:
		e.Add("partitions", `needs [state] store = "jetstream" (the leases and states of the partitions)`)
	case k.Partitions > 0 && strings.Count(k.PartitionSubject, Token) != 1:
		e.Add("partition_subject", "must contain %q once (a partition's filter subject, as the server's mapping names it), got %q", Token, k.PartitionSubject)
	case k.Partitions > 0:
		if err := natsconn.CheckSubject(Subject(k.PartitionSubject, 0), true); err != nil {
			e.Add("partition_subject", "invalid subject %q: %v", k.PartitionSubject, err)
		}
	}
	if k.MaxPartitions < 0 || k.Partitions > 0 && k.MaxPartitions > k.Partitions {
		e.Add("max_partitions", "must be between 0 (all) and partitions (%d), got %d", k.Partitions, k.MaxPartitions)
	}
	return errors.Join(e...)
}
