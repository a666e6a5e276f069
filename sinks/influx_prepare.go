package sinks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxQueryResponse bounds what Prepare reads of an answer of InfluxDB's.
const maxQueryResponse = 1 << 20

// Prepare makes sure, before the first write, that an InfluxDB 1.x has
// the database the sink writes to (Bucket's part before '/'): if it is
// missing, Prepare creates it with CreateDatabase, and otherwise returns
// an error naming the command that creates it. It returns an error too if
// InfluxDB refuses the token. A server that does not answer is not an
// error (the writes wait for it), nor is an InfluxDB 2.x, whose buckets
// Prepare does not check. The sink calls it again when a write finds the
// database gone and CreateDatabase is set.
func (s *Influx) Prepare(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout.D)
	defer cancel()
	version, err := ping(ctx, s.http, s.cfg.URL)
	if err != nil {
		// Not reachable now: the writes retry. Said now, not at the
		// first flush, so that a wrong url shows at start.
		s.log.Warn("InfluxDB not reachable; forecasts are buffered (metric_buffer_limit) and written once it answers",
			"url", s.cfg.URL, "err", err, "fix", "check [output.influxdb] url, and that InfluxDB runs there")
		return nil
	}
	if majorVersion(version) >= 2 {
		return nil
	}
	db := s.database()
	var names []string
	if err := s.query(ctx, http.MethodGet, "SHOW DATABASES", &names); err != nil {
		return err
	}
	if slices.Contains(names, db) {
		return nil
	}
	if !s.cfg.CreateDatabase {
		return fmt.Errorf("sinks: influxdb: database %q not found on %s; create it with\n  %s\nor set create_database = true in [output.influxdb]",
			db, s.cfg.URL, s.createCommand())
	}
	if err := s.query(ctx, http.MethodPost, "CREATE DATABASE "+quoteIdent(db), nil); err != nil {
		return err
	}
	s.log.Info("created the database", "database", db)
	return nil
}

// Ping asks the InfluxDB at url whether it is there (GET /ping), within
// timeout: nil if it answers, else why not. For check-config: forecastd
// starts without it, but a wrong url then shows only at the first write.
func Ping(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &http.Client{}
	defer c.CloseIdleConnections()
	_, err := ping(ctx, c, url)
	return err
}

// ping sends GET /ping to the InfluxDB at url and returns its version
// (X-Influxdb-Version), or why it did not answer with a success.
func ping(ctx context.Context, c *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(url, "/")+"/ping", nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxQueryResponse))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("GET /ping: %s (is it InfluxDB?)", resp.Status)
	}
	return resp.Header.Get("X-Influxdb-Version"), nil
}

// majorVersion returns the major version of an X-Influxdb-Version
// ("1.8.10", "v2.7.1"), or 0 if it does not start with one (a build from
// source says "unknown").
func majorVersion(v string) int {
	v = strings.TrimPrefix(v, "v")
	major, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 0
	}
	return n
}

// database is the 1.x database of Bucket ("db" or "db/rp").
func (s *Influx) database() string {
	db, _, _ := strings.Cut(s.cfg.Bucket, "/")
	return db
}

// createCommand is the shell command that creates the database, for a
// person to run: with the user of Token, whose password curl asks for,
// never the password itself.
func (s *Influx) createCommand() string {
	cmd := "curl -XPOST " + shellQuote(strings.TrimRight(s.cfg.URL, "/")+"/query")
	if user, _, ok := strings.Cut(s.cfg.Token, ":"); ok && user != "" {
		cmd += " -u " + shellQuote(user)
	}
	return cmd + " --data-urlencode " + shellQuote("q=CREATE DATABASE "+quoteIdent(s.database()))
}

// query runs an InfluxQL statement through the 1.x /query endpoint; with
// names non-nil, it stores there the first column of the first series of
// the answer (SHOW DATABASES: the names).
func (s *Influx) query(ctx context.Context, method, q string, names *[]string) error {
	form := url.Values{"q": {q}}
	u := strings.TrimRight(s.cfg.URL, "/") + "/query"
	var body io.Reader
	if method == http.MethodGet {
		u += "?" + form.Encode()
	} else {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return fmt.Errorf("sinks: influxdb: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if s.cfg.Token != "" {
		req.Header.Set("Authorization", "Token "+s.cfg.Token) // as influxdb-client-go sends it
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("sinks: influxdb: %s: %w", q, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxQueryResponse))
	if err != nil {
		return fmt.Errorf("sinks: influxdb: %s: %w", q, err)
	}
	var ans struct {
		Error   string `json:"error"`
		Results []struct {
			Error  string `json:"error"`
			Series []struct {
				Values [][]any `json:"values"`
			} `json:"series"`
		} `json:"results"`
	}
	jerr := json.Unmarshal(b, &ans)
	msg := ans.Error
	if msg == "" && len(ans.Results) > 0 {
		msg = ans.Results[0].Error
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("sinks: influxdb: %s: token refused (%s): %s", q, resp.Status, msg)
	case resp.StatusCode != http.StatusOK || msg != "":
		return fmt.Errorf("sinks: influxdb: %s: %s: %s", q, resp.Status, msg)
	case jerr != nil:
		return fmt.Errorf("sinks: influxdb: %s: %w", q, jerr)
	}
	if names != nil && len(ans.Results) > 0 {
		for _, se := range ans.Results[0].Series {
			for _, row := range se.Values {
				if len(row) > 0 {
					if n, ok := row[0].(string); ok {
						*names = append(*names, n)
					}
				}
			}
		}
	}
	return nil
}

// quoteIdent returns name as an InfluxQL quoted identifier.
func quoteIdent(name string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(name) + `"`
}

// shellQuote returns s single-quoted for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
