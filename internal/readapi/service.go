package readapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/forecastd/forecastd/internal/keyglob"
)

// The NATS subjects of the API, as a micro service (discoverable on
// $SRV.PING.forecastd-api, $SRV.INFO…, $SRV.STATS…).
const (
	ServiceName   = "forecastd-api"
	SubjectList   = "forecastd.api.series.list"
	SubjectSeries = "forecastd.api.series.get"
)

// ListRequest is the body of a request on SubjectList, the query of GET
// /api/v1/series.
type ListRequest struct {
	Match string `json:"match"`
	Limit int    `json:"limit"`
	After string `json:"after"`
}

// service is the API's micro service on the connection it was added to,
// added again on a connection that replaces it.
type service struct {
	mu  sync.Mutex
	svc micro.Service
}

// AddService answers the API on nc as the micro service ServiceName: on
// SubjectList a ListRequest (JSON; empty: the first page of every
// series) is answered a SeriesPage; on SubjectSeries a series key (the
// body, as it is) its Series, or the error 404. Replace moves it to a
// new connection; Close stops it.
func (s *Store) AddService(nc *nats.Conn) error {
	svc, err := micro.AddService(nc, micro.Config{
		Name:        ServiceName,
		Version:     "1.0.0",
		Description: "forecastd's read API: the series, their latest forecasts and open events",
	})
	if err != nil {
		return fmt.Errorf("readapi: add service: %w", err)
	}
	if err := errors.Join(
		svc.AddEndpoint("list", micro.HandlerFunc(s.serveList), micro.WithEndpointSubject(SubjectList)),
		svc.AddEndpoint("get", micro.HandlerFunc(s.serveGet), micro.WithEndpointSubject(SubjectSeries)),
	); err != nil {
		_ = svc.Stop()
		return fmt.Errorf("readapi: add service: %w", err)
	}
	s.svc.mu.Lock()
	old := s.svc.svc
	s.svc.svc = svc
	s.svc.mu.Unlock()
	if old != nil {
		_ = old.Stop()
	}
	return nil
}

// stopService stops the micro service, if any.
func (s *Store) stopService() error {
	s.svc.mu.Lock()
	svc := s.svc.svc
	s.svc.svc = nil
	s.svc.mu.Unlock()
	if svc == nil {
		return nil
	}
	return svc.Stop()
}

func (s *Store) serveList(req micro.Request) {
	var q ListRequest
	if len(req.Data()) > 0 {
		if err := json.Unmarshal(req.Data(), &q); err != nil {
			_ = req.Error("400", "not a list request: "+err.Error(), nil)
			return
		}
	}
	if q.Match == "" {
		q.Match = "*"
	}
	g, err := keyglob.Compile(q.Match)
	if err != nil {
		_ = req.Error("400", "match: "+err.Error(), nil)
		return
	}
	if q.Limit == 0 {
		q.Limit = DefaultLimit
	}
	if q.Limit < 1 || q.Limit > s.maxPage {
		_ = req.Error("400", "limit: want 1 to "+strconv.Itoa(s.maxPage), nil)
		return
	}
	after, err := base64.RawURLEncoding.DecodeString(q.After)
	if err != nil {
		_ = req.Error("400", "after: not a cursor of this API", nil)
		return
	}
	_ = req.Respond(s.page(nil, g.Match, literalPrefix(q.Match), string(after), q.Limit))
}

func (s *Store) serveGet(req micro.Request) {
	e := s.lookup(string(req.Data()))
	if e == nil {
		_ = req.Error("404", fmt.Sprintf("no series %q", req.Data()), nil)
		return
	}
	_ = req.RespondJSON(e.detail())
}
