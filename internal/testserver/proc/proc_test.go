package proc

import (
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
)

// WaitReady returns once the URL answers the status, and an error naming
// the server once the process has exited without it answering.
func TestWaitReady(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	cmd := exec.Command("sleep", "30")
	exited, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); <-exited }()
	if err := WaitReady(cmd, exited, "sleep", srv.URL, http.StatusNoContent); err != nil {
		t.Errorf("ready server: %v", err)
	}

	gone := exec.Command("sh", "-c", "exit 3")
	exited2, err := Start(gone)
	if err != nil {
		t.Fatal(err)
	}
	err = WaitReady(gone, exited2, "sh", srv.URL+"/never", http.StatusOK)
	if err == nil || !strings.Contains(err.Error(), "sh exited before") {
		t.Errorf("exited process: %v, want an error naming it", err)
	}
}
