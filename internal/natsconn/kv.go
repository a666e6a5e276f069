package natsconn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// KVAttempt bounds each request of OpenKV: on a cluster still electing its
// leaders, or a server that lost its route, a JetStream API request may get
// no answer at all, and one request must not use up the whole ctx.
const KVAttempt = 5 * time.Second

// OpenKV binds to cfg's key-value bucket, creating it if it does not exist,
// and returns it with its status, which it has read back. Several
// instances starting together may race to create it, and a fresh cluster
// may not answer yet, or answer that a stream another instance has just
// created is not found: each lookup, creation and status is bounded by
// KVAttempt, and OpenKV tries again every 200 ms until ctx ends, calling
// onRetry (if not nil) with each failed attempt's error so that the caller
// can say what it waits for.
func OpenKV(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig, onRetry func(error)) (jetstream.KeyValue, jetstream.KeyValueStatus, error) {
	return openKV(ctx, js, cfg, KVAttempt, onRetry)
}

func openKV(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig, attempt time.Duration, onRetry func(error)) (jetstream.KeyValue, jetstream.KeyValueStatus, error) {
	for {
		actx, cancel := context.WithTimeout(ctx, attempt)
		kv, err := js.KeyValue(actx, cfg.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			kv, err = js.CreateKeyValue(actx, cfg)
		}
		var st jetstream.KeyValueStatus
		if err == nil {
			st, err = kv.Status(actx)
		}
		cancel()
		if err == nil {
			return kv, st, nil
		}
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		}
		if onRetry != nil {
			onRetry(err)
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
