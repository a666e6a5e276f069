package sinks

import (
	"github.com/forecastd/forecastd/internal/config/schema"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
)

// Prepare on an InfluxDB without the database: without CreateDatabase it
// names a command, which, run as printed, creates the database; with it,
// it creates the database itself; a refused token is an error.
func TestInfluxPrepare(t *testing.T) {
	t.Parallel()
	t.Run("command", func(t *testing.T) {
		t.Parallel()
		if _, err := exec.LookPath("curl"); err != nil { // the command it prints is curl's
			if os.Getenv("CI") == "true" {
				t.Fatal("no curl to run the command with (scripts/test installs it)")
			}
			t.Skip("no curl to run the command with")
		}
		srv := influxtest.Shared(t, influxtest.Options{})
		// A database of its own on the shared server, not yet created.
		s := newInflux(t, InfluxConfig{URL: srv.URL, Bucket: srv.Database + " fresh 'db'/autogen"})
		err := s.Prepare(ctxTimeout(t, 10*time.Second))
		if err == nil {
			t.Fatal("no error for a missing database")
		}
		_, cmd, ok := strings.Cut(err.Error(), "create it with\n  ")
		cmd, _, _ = strings.Cut(cmd, "\n")
		if !ok || !strings.HasPrefix(cmd, "curl ") {
			t.Fatalf("error %q names no command", err)
		}
		if out, err := exec.Command("sh", "-c", cmd+" --fail --silent --show-error").CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
		if err := s.Prepare(ctxTimeout(t, 10*time.Second)); err != nil {
			t.Fatalf("after %s: %v", cmd, err)
		}
	})
	t.Run("auth", func(t *testing.T) {
		t.Parallel()
		srv := influxtest.Shared(t, influxtest.Options{Auth: true})
		fresh := srv.Database + "_fresh"
		s := newInflux(t, InfluxConfig{URL: srv.URL, Token: srv.Token, Bucket: fresh})
		err := s.Prepare(ctxTimeout(t, 10*time.Second))
		if err == nil || !strings.Contains(err.Error(), "-u 'admin'") || strings.Contains(err.Error(), "secret") {
			t.Fatalf("error %v: want a command with the user, without the password", err)
		}
		s = newInflux(t, InfluxConfig{URL: srv.URL, Token: srv.Token, Bucket: fresh, CreateDatabase: true})
		if err := s.Prepare(ctxTimeout(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		if out := srv.Query(t, "SHOW DATABASES"); !strings.Contains(out, `["`+fresh+`"]`) {
			t.Fatalf("SHOW DATABASES: %s", out)
		}
		s = newInflux(t, InfluxConfig{URL: srv.URL, Token: "admin:wrong", Bucket: fresh, CreateDatabase: true})
		if err := s.Prepare(ctxTimeout(t, 10*time.Second)); err == nil || !strings.Contains(err.Error(), "token refused") {
			t.Fatalf("bad password: error %v", err)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		s := newInflux(t, InfluxConfig{URL: "http://127.0.0.1:1", Bucket: "db", Timeout: schema.Dur(time.Second)})
		if err := s.Prepare(ctxTimeout(t, 10*time.Second)); err != nil {
			t.Fatalf("unreachable server: %v, want nil (the writes retry)", err)
		}
	})
}

// Writes into a database that does not exist yet are kept and retried,
// not discarded: once it is created (by a person, or by the sink with
// CreateDatabase) every record is written.
func TestInfluxDatabaseNotFoundKept(t *testing.T) {
	t.Parallel()
	for _, create := range []bool{false, true} {
		name := map[bool]string{false: "created later", true: "create_database"}[create]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := influxtest.Shared(t, influxtest.Options{Auth: true})
			later := srv.Database + "_later" // not yet created
			s := newInflux(t, InfluxConfig{URL: srv.URL, Token: srv.Token, Bucket: later + "/autogen",
				MetricBatchSize: 4, RetryInterval: 10 * time.Millisecond, MaxRetryInterval: 50 * time.Millisecond,
				Timeout: schema.Dur(2 * time.Second), CreateDatabase: create})
			for i := range 10 {
				if err := s.Write(forecastRec("cpu", "in", i, false)); err != nil {
					t.Fatal(err)
				}
			}
			if !create {
				deadline := time.Now().Add(30 * time.Second)
				for s.Stats().WriteErrors == 0 {
					if time.Now().After(deadline) {
						t.Fatal("no write failed")
					}
					time.Sleep(10 * time.Millisecond)
				}
				srv.Query(t, `CREATE DATABASE "`+later+`"`)
			}
			if err := s.Close(ctxTimeout(t, 30*time.Second)); err != nil {
				t.Fatal(err)
			}
			if st := s.Stats(); st.Written != 10 || st.Rejected != 0 || st.Dropped != 0 {
				t.Fatalf("stats %+v, want 10 written", st)
			}
			if out := srv.Query(t, `SELECT count("yhat") FROM "`+later+`"."autogen"."forecast"`); !strings.Contains(out, ",10]") {
				t.Fatalf("count: %s", out)
			}
		})
	}
}
