package sinks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/forecastd/forecastd/internal/config/schema"
)

func init() {
	Register(alertmanagerKind{})
	Register(webhookKind{})
}

// DefaultResendInterval is how often an open alert is sent again to
// Alertmanager, as Prometheus' --rules.alert.resend-delay.
const DefaultResendInterval = time.Minute

// alertValidFor is how many resend intervals past its last sending an
// open alert's endsAt lies, as Prometheus sets it: Alertmanager resolves
// an alert that is not sent again by then.
const alertValidFor = 4

// AlertmanagerConfig configures an [Alertmanager] sink, [output.alertmanager].
// Zero fields take the defaults named.
type AlertmanagerConfig struct {
	// URL of Alertmanager, e.g. "http://127.0.0.1:9093"; alerts are
	// posted to URL/api/v2/alerts. Required.
	URL string `toml:"url" doc:"Alertmanager's URL, http(s)://HOST:PORT[/PATH]; alerts go to /api/v2/alerts under it"`
	// Timeout of one request (default 10s).
	Timeout schema.Duration `toml:"timeout" doc:"of one request"`
	// ResendInterval: an open alert is sent again this often (default
	// 1m), its endsAt four intervals ahead, so that Alertmanager holds it
	// open (and a restarted one learns it again) until its event closes.
	ResendInterval schema.Duration `toml:"resend_interval" doc:"an open alert is sent again this often, its endsAt 4 intervals ahead"`
	// MaxAlerts bounds the alerts held (default 10000): open, or with a
	// state not yet delivered. An event of a new alert beyond it is
	// dropped and counted.
	MaxAlerts int `toml:"max_alerts" doc:"alerts held, open or waiting to be delivered, at most (0: the default); beyond, new ones are dropped and counted"`
	// MaxLabels bounds an alert's labels (default 32); the series' tags
	// beyond it are left out.
	MaxLabels int `toml:"max_labels" doc:"labels of an alert at most, its own first, then the series' tags (0: the default)"`
	// MaxLabelLength bounds a label's or an annotation's value in bytes
	// (default 512); a longer one is cut and ends with a hash of the
	// whole.
	MaxLabelLength int `toml:"max_label_length" doc:"bytes of a label or annotation value at most, a longer one cut and ended with a hash (0: the default)"`
	// RetryInterval is the first wait before retrying a failed request
	// (default 1s), doubled at each failure up to MaxRetryInterval
	// (default 30s), each within ±20 % (internal/retry).
	RetryInterval, MaxRetryInterval time.Duration `toml:"-"`
	// Logger receives failures, recoveries and drops, rate-limited; nil
	// discards.
	Logger *slog.Logger `toml:"-"`

	// now, when set (by tests), is the sink's clock.
	now func() time.Time
}

// Validate returns every problem of c at once, each naming its key.
func (c *AlertmanagerConfig) Validate() error {
	return validateAlertConfig(c.URL, c.Timeout, c.ResendInterval, false, c.MaxAlerts, c.MaxLabels, c.MaxLabelLength)
}

// validateAlertConfig checks the keys the alert sinks share.
func validateAlertConfig(u string, timeout, resend schema.Duration, resendZero bool, maxAlerts, maxLabels, maxLen int) error {
	var errs []error
	if u == "" {
		errs = append(errs, errors.New("url: required"))
	} else if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		errs = append(errs, fmt.Errorf("url: want http(s)://HOST:PORT[/PATH], got %q", u))
	}
	if msg := timeout.Positive(false); msg != "" {
		errs = append(errs, fmt.Errorf("timeout: %s", msg))
	}
	if msg := resend.Positive(resendZero); msg != "" {
		errs = append(errs, fmt.Errorf("resend_interval: %s", msg))
	}
	for _, v := range []struct {
		key string
		n   int
	}{{"max_alerts", maxAlerts}, {"max_labels", maxLabels}, {"max_label_length", maxLen}} {
		if v.n < 0 {
			errs = append(errs, fmt.Errorf("%s: negative", v.key))
		}
	}
	if maxLabels > 0 && maxLabels < len(alertLabelNames) {
		errs = append(errs, fmt.Errorf("max_labels: at least %d (the alert's own: %s), got %d", len(alertLabelNames), strings.Join(alertLabelNames, ", "), maxLabels))
	}
	if maxLen > 0 && maxLen < 32 {
		errs = append(errs, fmt.Errorf("max_label_length: at least 32, got %d", maxLen))
	}
	return errors.Join(errs...)
}

// WithDefaults returns c with its defaults filled in.
func (c AlertmanagerConfig) WithDefaults() AlertmanagerConfig {
	if !c.Timeout.IsSet() {
		c.Timeout = schema.Dur(DefaultAlertTimeout)
	}
	if !c.ResendInterval.IsSet() {
		c.ResendInterval = schema.Dur(DefaultResendInterval)
	}
	c.MaxAlerts, c.MaxLabels, c.MaxLabelLength = alertLimits(c.MaxAlerts, c.MaxLabels, c.MaxLabelLength)
	c.RetryInterval, c.MaxRetryInterval = alertRetry(c.RetryInterval, c.MaxRetryInterval)
	return c
}

func alertLimits(maxAlerts, maxLabels, maxLen int) (int, int, int) {
	if maxAlerts == 0 {
		maxAlerts = DefaultMaxAlerts
	}
	if maxLabels == 0 {
		maxLabels = DefaultMaxLabels
	}
	if maxLen == 0 {
		maxLen = DefaultMaxLabelLength
	}
	return maxAlerts, maxLabels, maxLen
}

func alertRetry(first, most time.Duration) (time.Duration, time.Duration) {
	if first == 0 {
		first = DefaultAlertRetryInterval
	}
	if most == 0 {
		most = DefaultAlertMaxRetry
	}
	return first, max(first, most)
}

// Reacher is a sink's configuration whose server check-config asks
// whether it answers now: Reach returns the key that names the server,
// what the daemon does without it, and why it does not answer (nil if it
// does) within timeout.
type Reacher interface {
	Reach(ctx context.Context, timeout time.Duration) (key, then string, err error)
}

var _ Reacher = (*AlertmanagerConfig)(nil)

// Reach asks Alertmanager's GET /-/ready.
func (c *AlertmanagerConfig) Reach(ctx context.Context, timeout time.Duration) (key, then string, err error) {
	return "url", "alerts are held until it answers, new ones dropped beyond max_alerts",
		reach(ctx, strings.TrimRight(c.URL, "/")+"/-/ready", timeout)
}

// reach sends GET u and reports an error unless it answers 2xx.
func reach(ctx context.Context, u string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &http.Client{}
	defer c.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return nil
}

// Alertmanager sends the threshold and anomaly events to Alertmanager's
// v2 API (POST /api/v2/alerts), an alert per event: its labels the
// series' (alertname ForecastThreshold or ForecastAnomaly, kind, series,
// direction, threshold, step, measurement, field, model, then the
// series' tags), its annotations the ETA, probability and forecast (or
// the anomaly's score), startsAt the event's opening, endsAt its closing,
// or, while open, four resend intervals after the last sending.
type Alertmanager struct{ *alertSink }

var _ Sink = (*Alertmanager)(nil)

// NewAlertmanager returns a sink to the Alertmanager of c, or c's
// problems. It starts a goroutine, which Close stops.
func NewAlertmanager(c AlertmanagerConfig) (*Alertmanager, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c = c.WithDefaults()
	resend := c.ResendInterval.D
	o := alertOptions{
		name:     "alertmanager",
		endpoint: strings.TrimRight(c.URL, "/") + "/api/v2/alerts",
		timeout:  c.Timeout.D,
		resend:   resend,
		max:      c.MaxAlerts,
		bounds:   alertBounds{maxLabels: c.MaxLabels, maxLen: c.MaxLabelLength},
		retry:    c.RetryInterval,
		maxRetry: c.MaxRetryInterval,
		logger:   c.Logger,
		now:      c.now,
		encode: func(items []alertItem, now time.Time) ([]byte, error) {
			return encodeAlertmanager(items, now.Add(alertValidFor*resend))
		},
	}
	return &Alertmanager{newAlertSink(o)}, nil
}

// postableAlert is an alert of Alertmanager's v2 API.
type postableAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations,omitempty"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
}

// encodeAlertmanager returns the body of POST /api/v2/alerts: the open
// alerts end at validUntil.
func encodeAlertmanager(items []alertItem, validUntil time.Time) ([]byte, error) {
	out := make([]postableAlert, len(items))
	for i, it := range items {
		end := it.st.endsAt
		if it.st.open() {
			end = validUntil
		}
		out[i] = postableAlert{Labels: it.st.labels, Annotations: it.st.annotations, StartsAt: it.st.startsAt.UTC(), EndsAt: end.UTC()}
	}
	return json.Marshal(out)
}

// alertmanagerKind opens the [Alertmanager] sink of [output.alertmanager]
// (Env.Config an *AlertmanagerConfig; absent, nil: no sink).
type alertmanagerKind struct{}

func (alertmanagerKind) Name() string { return "alertmanager" }

func (alertmanagerKind) Doc() string {
	return "If present, threshold and anomaly events are sent to Alertmanager as alerts (docs/alerting.md)."
}

func (alertmanagerKind) NewConfig() any { return new(AlertmanagerConfig) }

func (alertmanagerKind) Open(_ context.Context, env Env) (Sink, error) {
	c, _ := env.Config.(*AlertmanagerConfig)
	if c == nil {
		return nil, nil
	}
	cfg := *c
	if cfg.Logger == nil {
		cfg.Logger = env.Logger
	}
	return NewAlertmanager(cfg)
}

var alertmanagerMetrics = newAlertDescs("alertmanager")

// Describe implements prometheus.Collector.
func (s *Alertmanager) Describe(ch chan<- *prometheus.Desc) { alertmanagerMetrics.describe(ch) }

// Collect implements prometheus.Collector: records_written_total counts
// the alert states delivered, buffer_size the alerts held.
func (s *Alertmanager) Collect(ch chan<- prometheus.Metric) {
	alertmanagerMetrics.collect(ch, s.Stats())
}
