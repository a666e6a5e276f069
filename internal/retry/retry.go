// Package retry is how forecastd waits between attempts and how often it
// logs a repeated failure, so that every component does both alike:
// exponential back-off from github.com/cenkalti/backoff, rate limits from
// golang.org/x/time/rate.
package retry

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v5"
	"golang.org/x/time/rate"
)

// Backoff returns an exponential back-off from initial, doubling each
// attempt up to max, each wait drawn uniformly within ±jitter of it (0:
// exact). Reset starts it over. It is not safe for concurrent use.
func Backoff(initial, max time.Duration, jitter float64) *backoff.ExponentialBackOff {
	return &backoff.ExponentialBackOff{InitialInterval: initial, RandomizationFactor: jitter, Multiplier: 2, MaxInterval: max}
}

// Sleep waits d, and reports false if ctx ended first.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Every returns a limiter that allows one event per d (Allow), the first
// at once: a log line of a repeated failure at most once per d. It is
// safe for concurrent use.
func Every(d time.Duration) *rate.Limiter { return rate.NewLimiter(rate.Every(d), 1) }
