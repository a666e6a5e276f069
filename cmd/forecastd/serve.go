package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	sddaemon "github.com/coreos/go-systemd/v22/daemon"

	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/internal/memory"
)

// serve handles signals until SIGTERM or SIGINT (or a partition lost),
// then shuts down.
func (d *daemon) serve(sigs <-chan os.Signal) error {
	d.startLoops()
	if d.ready != nil {
		d.ready(d)
	}
	ready := d.newReadyNotifier()
	defer ready.stop()
	var fatal <-chan error // a partition's lease lost (internal/partition)
	if d.parts != nil {
		fatal = d.parts.Fatal()
	}
	rl := &reloader{d: d, timeout: cmp.Or(d.reloadTimeout, defaultReloadTimeout)}
	fatalErr := d.loop(sigs, fatal, ready, rl)
	d.notify(sddaemon.SdNotifyStopping)
	ctx, cancel := context.WithTimeout(context.Background(), d.shutdownTimeout())
	defer cancel()
	start := time.Now()
	rl.wait(ctx) // not applied, but waited for, within the deadline
	err := errors.Join(fatalErr, d.shutdown(ctx))
	if err != nil {
		d.log.Error("stopped with errors", "component", "daemon", "err", err, "took", time.Since(start))
		return err
	}
	d.log.Info("stopped", "component", "daemon", "took", time.Since(start))
	return nil
}

// startLoops starts the daemon's background goroutines, which stop when
// d.bg closes: the drop and warm-start logs, the systemd watchdog, and
// the memory budget's hold and the kernel cache's.
func (d *daemon) startLoops() {
	d.bg = make(chan struct{})
	d.wg.Add(1)
	go d.dropLoop()
	if d.history != nil {
		d.wg.Add(1)
		go d.warmLoop()
	}
	if iv, err := sddaemon.SdWatchdogEnabled(false); err == nil && iv > 0 {
		d.wg.Add(1)
		go d.watchdog(iv / 2)
	}
	if b := d.cfg.Pipeline.MemoryBudget; b.N > 0 {
		memory.SetLimit(uint64(b.N), os.Getenv("GOMEMLIMIT"))
		d.wg.Add(1)
		go d.budgetLoop(uint64(b.N))
	}
	if target := memory.SetCache(d.cfg.Pipeline.KernelCache, d.cfg.Pipeline.MemoryBudget.N); target > 0 {
		d.wg.Add(1)
		go d.cacheLoop(target)
	}
}

// loop serves signals, readiness and reloads until the daemon is to stop,
// and returns the error that stops it, if any.
func (d *daemon) loop(sigs <-chan os.Signal, fatal <-chan error, ready *readyNotifier, rl *reloader) error {
	for {
		select {
		case err := <-fatal:
			d.log.Error("stopping: this instance no longer holds a partition it was learning", "component", "daemon", "err", err)
			return err
		case <-ready.c:
			ready.check()
		case r := <-rl.reading:
			rl.done()
			d.reload(r.cfg, r.err)
			rl.next()
		case <-rl.since:
			rl.givenUp()
		case sig, ok := <-sigs:
			if !ok {
				return nil
			}
			if sig == syscall.SIGHUP {
				rl.hups++
				rl.next()
				continue
			}
			d.log.Info("stopping", "component", "daemon", "signal", sig.String(), "deadline", d.shutdownTimeout())
			return nil
		}
	}
}

// readyNotifier tells systemd READY=1 once the daemon is ready as
// /-/ready says (state restored, both NATS connections up): until then
// systemd shows the unit activating, with a STATUS saying what it waits
// for. c ticks until then, nil after.
type readyNotifier struct {
	d       *daemon
	poll    *time.Ticker
	c       <-chan time.Time
	waiting string
}

func (d *daemon) newReadyNotifier() *readyNotifier {
	r := &readyNotifier{d: d, poll: time.NewTicker(readyPoll)}
	r.c = r.poll.C
	r.check()
	return r
}

func (r *readyNotifier) stop() { r.poll.Stop() }

// check notifies systemd of the daemon's readiness, or of what it waits
// for if that changed.
func (r *readyNotifier) check() {
	d := r.d
	ok, why := d.readiness()
	if ok {
		d.notify(sddaemon.SdNotifyReady)
		d.notify("STATUS=running")
		d.log.Info("forecastd ready", "component", "daemon")
		r.poll.Stop()
		r.c = nil
		return
	}
	if why != r.waiting {
		r.waiting = why
		d.notify("STATUS=waiting: " + why)
		d.log.Info("forecastd not ready yet", "component", "daemon", "reason", why)
	}
}

// reloader reads the configuration file for SIGHUPs off serve's loop, one
// reading at a time, each SIGHUP a reading of its own; the loop applies
// what it read. Past timeout a reading is given up (its result, if it
// ever comes, is dropped) and the next one starts: nothing a signal asks
// can keep the loop from the next signal.
type reloader struct {
	d       *daemon
	timeout time.Duration
	reading chan reloadRead // the reading under way, nil if none
	since   <-chan time.Time
	hups    int // SIGHUPs waiting for a reading
}

// next starts a reading if a SIGHUP waits and none is under way.
func (r *reloader) next() {
	if r.reading != nil || r.hups == 0 {
		return
	}
	r.hups--
	r.reading = make(chan reloadRead, 1) // its goroutine never waits
	read := r.d.readConfig
	if read == nil {
		read = func(path string) (*config.Config, error) { return config.Load(path, config.DaemonChecks) }
	}
	go func(out chan<- reloadRead, path string) {
		cfg, err := read(path)
		out <- reloadRead{cfg, err}
	}(r.reading, r.d.path)
	r.since = time.After(r.timeout)
}

// done: the reading under way returned.
func (r *reloader) done() { r.reading, r.since = nil, nil }

// givenUp: the reading under way has not returned within the timeout.
func (r *reloader) givenUp() {
	r.d.log.Error("reload failed; the running configuration stays", "component", "daemon", "config", r.d.path,
		"err", fmt.Errorf("reading the file has not returned after %v (a hung file system?); given up", r.timeout))
	r.done()
	r.next()
}

// wait waits for the reading under way, if any, until ctx ends.
func (r *reloader) wait(ctx context.Context) {
	if r.reading == nil {
		return
	}
	select {
	case <-r.reading:
	case <-ctx.Done():
	}
}

func (d *daemon) notify(state string) {
	if _, err := sddaemon.SdNotify(false, state); err != nil {
		d.log.Warn("sd_notify", "component", "daemon", "state", state, "err", err)
	}
}

// watchdog tells systemd every interval that the daemon lives, as long as
// it does (live): otherwise systemd restarts it once WatchdogSec passes.
func (d *daemon) watchdog(every time.Duration) {
	defer d.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	var last uint64
	dead := ""
	for {
		select {
		case <-d.bg:
			return
		case <-t.C:
			ok, why := d.live(&last)
			if ok {
				d.notify(sddaemon.SdNotifyWatchdog)
			} else if why != dead {
				d.log.Error("not alive: the systemd watchdog is no longer told the daemon lives", "component", "daemon", "reason", why)
			}
			dead = why
		}
	}
}

// defaultReloadTimeout bounds a SIGHUP's reading of the configuration
// file.
const defaultReloadTimeout = 10 * time.Second

// reloadRead is what a SIGHUP's reading of the file found.
type reloadRead struct {
	cfg *config.Config
	err error
}

// reload applies cfg, the configuration file read again (or err, why it
// could not be), on serve's goroutine: [model] and [[rules]] to series
// created from now on; an invalid file changes nothing.
func (d *daemon) reload(cfg *config.Config, err error) {
	log := d.log.With("component", "daemon", "config", d.path)
	if err != nil {
		log.Error("reload failed; the running configuration stays", "err", err)
		return
	}
	def, rules, err := d.rules(cfg)
	if err == nil {
		err = d.runner.SetRules(def, rules)
	}
	if err != nil {
		log.Error("reload failed; the running configuration stays", "err", err)
		return
	}
	running := cmp.Or(d.reloaded, d.cfg)
	changed, restart := config.Changes(running, cfg)
	for _, t := range restart {
		log.Warn("reload: changes to this table take effect at the next start", "table", t)
	}
	// Only [model] and [[rules]] were applied: keep the rest as running.
	applied := *running
	applied.Model, applied.Rules = cfg.Model, cfg.Rules
	d.reloaded = &applied
	if len(changed) == 0 {
		log.Info("reloaded: [model] and [[rules]] unchanged")
		return
	}
	log.Info("reloaded: new series take the new [model] and [[rules]]", "changed", changed)
}
