package influxtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(Wrap(m).Run()) }

// Tests sharing a server get databases of their own on it, and cannot
// stop it.
func TestShared(t *testing.T) {
	for _, auth := range []bool{false, true} {
		a, b := Shared(t, Options{Auth: auth}), Shared(t, Options{Auth: auth})
		if a.URL != b.URL || a.Database == b.Database || a.Bucket != a.Database+"/autogen" {
			t.Fatalf("auth %t: %s %s, %s %s: want one server, two databases", auth, a.URL, a.Database, b.URL, b.Database)
		}
		if (a.Token != "") != auth {
			t.Errorf("auth %t: token %q", auth, a.Token)
		}
		a.Query(t, `CREATE RETENTION POLICY "rp" ON "`+a.Database+`" DURATION 1d REPLICATION 1`)
		if out := b.Query(t, "SHOW RETENTION POLICIES"); strings.Contains(out, `"rp"`) {
			t.Errorf("auth %t: b sees a's retention policy: %s", auth, out)
		}
	}
}

func TestStartStopRestart(t *testing.T) {
	start := time.Now()
	s := Start(t, Options{Database: "metrics", Auth: true})
	t.Logf("influxd up in %v at %s", time.Since(start), s.URL)
	if s.Bucket != "metrics/autogen" || s.Token != "admin:secret" {
		t.Errorf("bucket %q token %q", s.Bucket, s.Token)
	}
	s.Query(t, `CREATE RETENTION POLICY "rp" ON "metrics" DURATION 1d REPLICATION 1`)
	s.Stop()
	s.Stop() // idempotent
	s.Restart()
	if out := s.Query(t, "SHOW RETENTION POLICIES"); !strings.Contains(out, `"rp"`) {
		t.Errorf("after restart: %s", out)
	}
}

// TestMissingBinary runs helperStart in a child process with no influxd
// to be found: under CI=true it must fail, elsewhere skip.
func TestMissingBinary(t *testing.T) {
	if os.Getenv("INFLUXTEST_CHILD") == "1" {
		Start(t, Options{})
		t.Fatal("Start returned without influxd")
	}
	for _, tc := range []struct {
		ci       string
		wantFail bool
		wantOut  string
	}{
		{"true", true, "influxd is required under CI=true"},
		{"", false, "--- SKIP"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingBinary$", "-test.v")
		cmd.Env = append(os.Environ(), "INFLUXTEST_CHILD=1", "INFLUXD=/nonexistent/influxd", "CI="+tc.ci)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tc.wantFail || !strings.Contains(string(out), tc.wantOut) {
			t.Errorf("CI=%q: err %v, output:\n%s\nwant failure %t and %q", tc.ci, err, out, tc.wantFail, tc.wantOut)
		}
	}
}
