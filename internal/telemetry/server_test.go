package telemetry_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/telemetry"
)

func TestServerLifecycle(t *testing.T) {
	t.Parallel()
	s := telemetry.NewServer(telemetry.New(telemetry.Config{}).Handler(), nil)
	if err := s.Close(context.Background()); err != nil {
		t.Errorf("Close before Start: %v", err)
	}
	if s.Addr() != nil {
		t.Errorf("Addr before Start: %v", s.Addr())
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if err := s.Start("127.0.0.1:0"); !errors.Is(err, telemetry.ErrServerStarted) {
		t.Errorf("second Start: %v, want ErrServerStarted", err)
	}
	url := "http://" + s.Addr().String() + "/-/healthy"
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	if code, _ := get(t, c, url); code != 200 {
		t.Fatalf("/-/healthy: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	tr.CloseIdleConnections()
	if resp, err := c.Get(url); err == nil {
		resp.Body.Close()
		t.Errorf("GET after Close: %s, want an error", resp.Status)
	}
	if err := s.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestServerStartError(t *testing.T) {
	t.Parallel()
	a := telemetry.NewServer(http.NotFoundHandler(), nil)
	if err := a.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	b := telemetry.NewServer(http.NotFoundHandler(), nil)
	if err := b.Start(a.Addr().String()); err == nil {
		b.Close(context.Background())
		t.Fatal("Start on a port in use succeeded")
	}
	if err := b.Start("127.0.0.1:bad"); err == nil {
		t.Fatal("Start on a bad address succeeded")
	}
}

// TestServerCloseWaitsForHandlers: when a request outlives Close's
// deadline, Close cuts its connection, returns ctx's error, and only
// once the handler has returned.
func TestServerCloseWaitsForHandlers(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	s := telemetry.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	}), nil)
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	got := make(chan error, 1)
	go func() {
		resp, err := (&http.Client{Transport: tr}).Get("http://" + s.Addr().String() + "/")
		if err == nil {
			resp.Body.Close()
		}
		got <- err
	}()
	<-entered

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- s.Close(ctx) }()
	<-ctx.Done()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a handler was running", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-closed:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Close: %v, want DeadlineExceeded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return after the handler did")
	}
	if err := <-got; err == nil {
		t.Error("the cut request succeeded")
	}
}
