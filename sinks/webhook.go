package sinks

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/forecastd/forecastd/internal/config/schema"
)

// WebhookConfig configures a [Webhook] sink, [output.webhook]. Zero
// fields take the defaults named.
type WebhookConfig struct {
	// URL the events are posted to. Required.
	URL string `toml:"url" doc:"the URL events are posted to, http(s)://HOST:PORT/PATH"`
	// Timeout of one request (default 10s).
	Timeout schema.Duration `toml:"timeout" doc:"of one request"`
	// ResendInterval: an open alert is posted again this often; zero
	// (the default): each state once.
	ResendInterval schema.Duration `toml:"resend_interval" doc:"an open alert is posted again this often (default: never, each state once)"`
	// MaxAlerts, MaxLabels and MaxLabelLength bound what is held and
	// sent, as [AlertmanagerConfig]'s.
	MaxAlerts      int `toml:"max_alerts" doc:"alerts held, open or waiting to be delivered, at most (0: the default, 10000); beyond, new ones are dropped and counted"`
	MaxLabels      int `toml:"max_labels" doc:"labels of an alert at most (0: the default, 32)"`
	MaxLabelLength int `toml:"max_label_length" doc:"bytes of a label or annotation value at most (0: the default, 512)"`
	// RetryInterval and MaxRetryInterval: as AlertmanagerConfig's.
	RetryInterval, MaxRetryInterval time.Duration `toml:"-"`
	// Logger: as AlertmanagerConfig's.
	Logger *slog.Logger `toml:"-"`

	now func() time.Time
}

// Validate returns every problem of c at once, each naming its key.
func (c *WebhookConfig) Validate() error {
	return validateAlertConfig(c.URL, c.Timeout, c.ResendInterval, true, c.MaxAlerts, c.MaxLabels, c.MaxLabelLength)
}

// WithDefaults returns c with its defaults filled in.
func (c WebhookConfig) WithDefaults() WebhookConfig {
	if !c.Timeout.IsSet() {
		c.Timeout = schema.Dur(DefaultAlertTimeout)
	}
	c.MaxAlerts, c.MaxLabels, c.MaxLabelLength = alertLimits(c.MaxAlerts, c.MaxLabels, c.MaxLabelLength)
	c.RetryInterval, c.MaxRetryInterval = alertRetry(c.RetryInterval, c.MaxRetryInterval)
	return c
}

// Webhook posts the threshold and anomaly events as JSON, in the form of
// Alertmanager's webhook notifications (version "4"):
//
//	{"version":"4","receiver":"forecastd","status":"firing",
//	 "alerts":[{"status":"firing","labels":{…},"annotations":{…},
//	            "startsAt":"…","endsAt":"0001-01-01T00:00:00Z","fingerprint":"…"}]}
//
// with the labels and annotations of [Alertmanager]'s alerts; an open
// alert has the zero endsAt, a resolved one its closing time. The body's
// status is "resolved" when every alert in it is, "firing" otherwise.
type Webhook struct{ *alertSink }

var _ Sink = (*Webhook)(nil)

// NewWebhook returns a sink to the webhook of c, or c's problems. It
// starts a goroutine, which Close stops.
func NewWebhook(c WebhookConfig) (*Webhook, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c = c.WithDefaults()
	o := alertOptions{
		name:     "webhook",
		endpoint: c.URL,
		timeout:  c.Timeout.D,
		resend:   c.ResendInterval.D,
		max:      c.MaxAlerts,
		bounds:   alertBounds{maxLabels: c.MaxLabels, maxLen: c.MaxLabelLength},
		retry:    c.RetryInterval,
		maxRetry: c.MaxRetryInterval,
		logger:   c.Logger,
		now:      c.now,
		encode:   func(items []alertItem, _ time.Time) ([]byte, error) { return encodeWebhook(items) },
	}
	return &Webhook{newAlertSink(o)}, nil
}

// WebhookMessage is the body the webhook posts.
type WebhookMessage struct {
	Version  string         `json:"version"`
	Receiver string         `json:"receiver"`
	Status   string         `json:"status"`
	Alerts   []WebhookAlert `json:"alerts"`
}

// WebhookAlert is one alert of a [WebhookMessage].
type WebhookAlert struct {
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
	Fingerprint string            `json:"fingerprint"`
}

func encodeWebhook(items []alertItem) ([]byte, error) {
	m := WebhookMessage{Version: "4", Receiver: "forecastd", Status: "resolved", Alerts: make([]WebhookAlert, len(items))}
	for i, it := range items {
		a := WebhookAlert{Status: "resolved", Labels: it.st.labels, Annotations: it.st.annotations,
			StartsAt: it.st.startsAt.UTC(), EndsAt: it.st.endsAt.UTC(), Fingerprint: it.st.fingerprint()}
		if it.st.open() {
			a.Status, a.EndsAt, m.Status = "firing", time.Time{}, "firing"
		}
		m.Alerts[i] = a
	}
	return json.Marshal(m)
}

// webhookKind opens the [Webhook] sink of [output.webhook].
type webhookKind struct{}

func (webhookKind) Name() string { return "webhook" }

func (webhookKind) Doc() string {
	return "If present, threshold and anomaly events are posted as JSON to a URL, as Alertmanager's webhook notifications (docs/alerting.md)."
}

func (webhookKind) NewConfig() any { return new(WebhookConfig) }

func (webhookKind) Open(_ context.Context, env Env) (Sink, error) {
	c, _ := env.Config.(*WebhookConfig)
	if c == nil {
		return nil, nil
	}
	cfg := *c
	if cfg.Logger == nil {
		cfg.Logger = env.Logger
	}
	return NewWebhook(cfg)
}

var webhookMetrics = newAlertDescs("webhook")

// Describe implements prometheus.Collector.
func (s *Webhook) Describe(ch chan<- *prometheus.Desc) { webhookMetrics.describe(ch) }

// Collect implements prometheus.Collector, as Alertmanager's.
func (s *Webhook) Collect(ch chan<- prometheus.Metric) { webhookMetrics.collect(ch, s.Stats()) }
