package history

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/forecastd/forecastd/pipeline"
)

// PromResult is one series of a query's answer: its labels (__name__
// included), sorted by name, and its samples in time order.
type PromResult struct {
	Labels []pipeline.Tag
	Points []pipeline.Point
}

// PromLimits bound what DecodePromResults keeps of an answer.
type PromLimits struct {
	// MaxBytes bounds the body; MaxSeries the series of the result;
	// MaxPoints the samples of all of them; MaxLabels and MaxLabelLength a
	// series' labels and the bytes of each name and value. Beyond any
	// of them the answer is refused, of class FailTooLarge. Each must be
	// positive.
	MaxBytes                  int64
	MaxSeries, MaxPoints      int
	MaxLabels, MaxLabelLength int
}

// PromRange is one /api/v1/query_range request: expr evaluated at every
// Step from Start to End, both included.
type PromRange struct {
	URL, Token string // the server's base URL; Token as PromConfig's
	Expr       string
	Start, End time.Time
	Step       time.Duration
}

// QueryRange runs q with client and decodes its answer as it streams in,
// within lim; on failure, the class (FailureClasses).
func QueryRange(ctx context.Context, client *http.Client, q PromRange, lim PromLimits) ([]PromResult, string, error) {
	p := &Prom{cfg: PromConfig{URL: strings.TrimRight(q.URL, "/"), Token: q.Token, Client: client}}
	body, class, err := p.request(ctx, promQuery{expr: q.Expr, isRange: true, start: q.Start, end: q.End, every: q.Step})
	if err != nil {
		return nil, class, err
	}
	defer body.Close()
	res, class, err := DecodePromResults(body, lim)
	if err != nil && class == FailDecode && (ctx.Err() != nil || brokenBody(err)) {
		class = netClass(ctx, err)
	}
	return res, class, err
}

// DecodePromResults reads an answer of Prometheus' HTTP API from r, every
// series of it, within lim; on failure, the class. It holds DecodeMemory
// bytes beside what it returns.
func DecodePromResults(r io.Reader, lim PromLimits) ([]PromResult, string, error) {
	d := newPromDecoder(r, lim.MaxBytes, lim.MaxPoints)
	d.lim = &lim
	if _, err := d.decode(); err != nil {
		return nil, promFailClass(err), err
	}
	return d.results, "", nil
}

// resultOf reads one series of the result with its labels (lim set).
func (d *promDecoder) resultOf() error {
	if ok, err := d.null(); ok || err != nil {
		return err
	}
	if d.series++; d.series > d.lim.MaxSeries {
		return fmt.Errorf("%w: more than %d series (max_series)", errTooLarge, d.lim.MaxSeries)
	}
	var res PromResult
	from := len(d.pts)
	err := d.object(func(key string) error {
		switch key {
		case "metric":
			return d.labels(&res)
		case "values":
			return d.array(d.sample)
		case "value":
			return d.sample()
		}
		return d.skip(3)
	})
	if err != nil {
		return err
	}
	res.Points = slices.Clone(d.pts[from:])
	d.pts = d.pts[:from]
	slices.SortStableFunc(res.Points, func(a, b pipeline.Point) int { return a.Time.Compare(b.Time) })
	slices.SortFunc(res.Labels, func(a, b pipeline.Tag) int { return strings.Compare(a.Key, b.Key) })
	d.results = append(d.results, res)
	return nil
}

// labels reads a series' "metric" object into res, within lim.
func (d *promDecoder) labels(res *PromResult) error {
	if ok, err := d.null(); ok || err != nil {
		return err
	}
	return d.objectOf(maxString, func(key string) error {
		if len(res.Labels) >= d.lim.MaxLabels {
			return fmt.Errorf("%w: a series with more than %d labels", errTooLarge, d.lim.MaxLabels)
		}
		if len(key) > d.lim.MaxLabelLength {
			return fmt.Errorf("%w: a label name over %d bytes (max_label_length)", errTooLarge, d.lim.MaxLabelLength)
		}
		k := strings.Clone(key)
		v, err := d.optString()
		if err != nil {
			return err
		}
		if len(v) > d.lim.MaxLabelLength {
			return fmt.Errorf("%w: label %s's value over %d bytes (max_label_length)", errTooLarge, strconv.Quote(k), d.lim.MaxLabelLength)
		}
		res.Labels = append(res.Labels, pipeline.Tag{Key: k, Value: strings.Clone(v)})
		return nil
	})
}
