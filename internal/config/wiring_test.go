package config

import (
	"bytes"
	"strings"
	"testing"
)

// TestCheckWarnsAPIWithoutHTTP: check-config warns, without failing,
// of [output.api] without [http] listen, saying where it is served then.
func TestCheckWarnsAPIWithoutHTTP(t *testing.T) {
	for _, c := range []struct {
		name, extra, want string
	}{
		{"nowhere", "[output.api]\n", "output.api: [http] listen is empty: the read API is served nowhere"},
		{"nats only", "[output.api]\nnats_service = true\n", "output.api: [http] listen is empty: the read API answers on NATS only"},
		{"http", "[output.api]\n[http]\nlisten = \"127.0.0.1:0\"\n", ""},
		{"no api", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, "[nats]\nembedded = true\n[input]\nsubjects = [\"m\"]\n"+c.extra)
			var out, errb bytes.Buffer
			if err := CheckCommand([]string{p}, &out, &errb); err != nil {
				t.Fatalf("%v\n%s", err, errb.String())
			}
			got := out.String()
			if !strings.Contains(got, p+": OK") {
				t.Fatalf("not OK:\n%s", got)
			}
			if c.want == "" && strings.Contains(got, "output.api") || c.want != "" && !strings.Contains(got, p+": warning: "+c.want) {
				t.Fatalf("want warning %q:\n%s", c.want, got)
			}
		})
	}
}
