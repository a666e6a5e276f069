// Package proc starts the server binaries the test servers run (influxd,
// alertmanager) as child processes and waits until they are ready.
package proc

import (
	"fmt"
	"net/http"
	"os/exec"
	"time"
)

// Client is the HTTP client of the readiness probes: no connection kept
// between probes of a server that may restart.
var Client = &http.Client{
	Timeout:   10 * time.Second,
	Transport: &http.Transport{DisableKeepAlives: true},
}

// Start starts cmd, to be killed by the kernel if the test binary dies
// without stopping it (a panic, a timeout, a kill), and returns a channel
// closed when it has exited.
func Start(cmd *exec.Cmd) (exited chan struct{}, err error) {
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	exited = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	return exited, nil
}

// WaitReady polls url until it answers status, and returns an error if
// cmd exits first (exited closed) or two minutes pass: a bound to catch a
// hang, not a measure, since under load a start is slow. name names the
// server in the error.
func WaitReady(cmd *exec.Cmd, exited <-chan struct{}, name, url string, status int) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := Client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == status {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited before %s answered (%v)", name, url, cmd.ProcessState)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s did not answer %d within 2m", name, url, status)
		}
	}
}
