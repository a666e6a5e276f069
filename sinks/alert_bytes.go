package sinks

import "cmp"

// What one alert holds: its state, identity and queue entry
// (alertEntryBytes); a map slot per label and annotation
// (alertMapEntry: two string headers and the name); its annotations'
// values, formatted numbers and times (alertAnnotationBytes each) but
// the summary, of up to max_label_length bytes. Its labels' values are
// the series' own strings (its key, its tags), counted with the series.
const (
	alertAnnotations     = 10 // an anomaly's nine, at most
	alertEntryBytes      = 512
	alertMapEntry        = 64
	alertAnnotationBytes = 32
)

// alertBufferBytes bounds what an alert sink holds: maxAlerts alerts of
// maxLabels labels, values of up to maxLen bytes (0s: the defaults).
func alertBufferBytes(maxAlerts, maxLabels, maxLen int) int64 {
	maxAlerts = cmp.Or(maxAlerts, DefaultMaxAlerts)
	maxLabels = cmp.Or(maxLabels, DefaultMaxLabels)
	maxLen = cmp.Or(maxLen, DefaultMaxLabelLength)
	per := alertEntryBytes + (maxLabels+alertAnnotations)*alertMapEntry + alertAnnotations*alertAnnotationBytes + maxLen
	return int64(maxAlerts) * int64(per)
}

// BufferBytes is the most bytes the sink's queue holds: max_alerts
// alerts at their largest (check-config's memory estimate).
func (c *AlertmanagerConfig) BufferBytes() int64 {
	return alertBufferBytes(c.MaxAlerts, c.MaxLabels, c.MaxLabelLength)
}

// BufferBytes is as [AlertmanagerConfig.BufferBytes].
func (c *WebhookConfig) BufferBytes() int64 {
	return alertBufferBytes(c.MaxAlerts, c.MaxLabels, c.MaxLabelLength)
}
