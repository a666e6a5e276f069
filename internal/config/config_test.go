package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/sinks"
)

const examplePath = "../../config.example.toml"

// writeFile writes a configuration file into a temporary directory.
func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "forecastd.toml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReferenceUpToDate: docs/configuration.md is what the schema
// generates; after a change to the schema, run go generate.
func TestReferenceUpToDate(t *testing.T) {
	got, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []pipeline.Kind // those of the build, not this test's toy kind
	for _, k := range pipeline.ModelKinds() {
		if k.String() != "toy" {
			kinds = append(kinds, k)
		}
	}
	if want := reference(kinds); !bytes.Equal(got, want) {
		t.Errorf("docs/configuration.md is stale: run \"go generate ./internal/config\"")
	}
}

// TestEveryKeyDocumented: every key and table of the schema has a doc,
// a plug-in's key from its registration, and every default the reference
// shows reads back as its key's value.
func TestEveryKeyDocumented(t *testing.T) {
	var walk func(rt reflect.Type, path string)
	walk = func(rt reflect.Type, path string) {
		defaults := defaultsOf(rt)
		for _, f := range reflect.VisibleFields(rt) {
			key := f.Tag.Get("toml")
			if key == "" || key == "-" || f.Anonymous {
				continue
			}
			at := join(path, key)
			if f.Tag.Get("doc") == "" {
				t.Errorf("%s: no doc", at)
			}
			if v := defaults.FieldByIndex(f.Index); isDefault(v) && !isTable(elem(f.Type)) && f.Type != reflect.TypeFor[Outputs]() {
				def := tomlText(v)
				if problems := decodeOne(t, rt, key, def); len(problems) > 0 {
					t.Errorf("%s: default %s: %v", at, def, problems)
				}
			}
			if isTable(elem(f.Type)) {
				walk(elem(f.Type), at)
			}
		}
	}
	walk(reflect.TypeFor[Config](), "")
	for _, k := range sinks.Kinds() {
		if c, ok := k.(sinks.Configurable); ok {
			walk(reflect.TypeOf(c.NewConfig()).Elem(), "output."+k.Name())
		}
	}
	for _, mk := range pipeline.ModelKeys() {
		if mk.Usage == "" {
			t.Errorf("model.%s: no usage", mk.Key)
		}
	}
}

// decodeOne decodes "key = value" into a new struct of type rt, returning
// the problems.
func decodeOne(t *testing.T, rt reflect.Type, key, value string) []*Problem {
	t.Helper()
	var doc map[string]any
	if err := toml.Unmarshal([]byte(key+" = "+value+"\n"), &doc); err != nil {
		t.Fatalf("%s = %s: %v", key, value, err)
	}
	f := &configFile{path: "default"}
	(&decoder{f: f}).table(doc, reflect.New(rt).Elem(), "")
	return f.problems
}

// TestModelDefaults: a [model] key set to its default (DefaultKeys, as the
// reference shows it) changes nothing: the configuration is the one
// without it.
func TestModelDefaults(t *testing.T) {
	base := "threshold_above = 100.0\n" // the threshold keys need a threshold
	want, err := loadModel(t, base)
	if err != nil {
		t.Fatal(err)
	}
	defaults := reflect.ValueOf(pipeline.DefaultKeys())
	n := 0
	for i, key := range pipeline.KeyNames() {
		v := defaults.Field(i)
		if v.IsNil() {
			continue
		}
		n++
		def := tomlText(v)
		got, err := loadModel(t, base+key+" = "+def+"\n")
		if err != nil {
			t.Errorf("%s = %s: %v", key, def, err)
			continue
		}
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Errorf("%s = %s is not the default:\n got %+v\nwant %+v", key, def, got, want)
		}
	}
	for _, mk := range pipeline.ModelKeys() {
		if mk.Default == nil {
			continue
		}
		n++
		def := tomlText(reflect.ValueOf(mk.Default))
		got, err := loadModel(t, base+mk.Key+" = "+def+"\n")
		if err != nil {
			t.Errorf("%s = %s: %v", mk.Key, def, err)
			continue
		}
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Errorf("%s = %s is not the default:\n got %+v\nwant %+v", mk.Key, def, got, want)
		}
	}
	if n < 45 {
		t.Errorf("only %d keys with a default", n)
	}
}

// loadModel returns the pipeline configuration of a [model] table.
func loadModel(t *testing.T, model string) (pipeline.Config, error) {
	t.Helper()
	c, err := Load(writeFile(t, "[input]\nsubjects = [\"a\"]\n[model]\n"+model))
	if err != nil {
		return pipeline.Config{}, err
	}
	pc, err := c.Model.Config()
	if pc.Horizon == 0 {
		pc.Horizon = 1 // pipeline.Config: "0 means 1"
	}
	// The kinds' own zero settings are their defaults.
	pc.SOG, pc.NORMA = pc.SOG.WithDefaults(), pc.NORMA.WithDefaults()
	return pc, err
}

// TestDaemonDefaults: a daemon key set to the default the reference shows
// loads as the file without it does, once the components fill in their
// defaults.
func TestDaemonDefaults(t *testing.T) {
	base := "[input]\nsubjects = [\"a\"]\n[input.jetstream]\nstream = \"s\"\ndurable = \"d\"\n[output.influxdb]\nurl = \"http://127.0.0.1:8086\"\nbucket = \"b\"\n[output.nats]\n[history]\n[nats]\n[pipeline]\n[state]\n"
	want, err := Load(writeFile(t, base))
	if err != nil {
		t.Fatal(err)
	}
	withDefaults := func(c *Config) *Config {
		d := *c
		d.Input.InputConfig = d.Input.InputConfig.WithDefaults()
		d.Input.Settings = nil
		d.Pipeline = d.Pipeline.WithDefaults()
		d.State = d.State.WithDefaults()
		h := d.History.WithDefaults()
		d.History = &h
		ic := d.Output.Influx().WithDefaults()
		nc := d.Output.NATS().WithDefaults()
		d.Output = Outputs{"influxdb": &ic, "nats": &nc}
		d.NATS = d.NATS.WithDefaults()
		js := *d.Input.JetStream
		js.ConsumerConfig = js.ConsumerConfig.WithDefaults()
		d.Input.JetStream = &js
		return &d
	}
	for _, c := range []struct{ table, key, value string }{
		{"nats", "servers", `["nats://127.0.0.1:4222"]`},
		{"input", "max_payload", "1048576"},
		{"input", "max_past", `"7d"`},
		{"input", "max_future", `"1m"`},
		{"input", "max_key_len", "1024"},
		{"input", "max_points", "10000"},
		{"input.jetstream", "ack_wait", `"30s"`},
		{"input.jetstream", "max_deliver", "5"},
		{"input.jetstream", "nak_delay", `"5s"`},
		{"input.jetstream", "max_ack_pending", "20000"},
		{"pipeline", "queue_size", "1024"},
		{"pipeline", "max_series", "100000"},
		{"pipeline", "idle_ttl", `"1h"`},
		{"pipeline", "shutdown_timeout", `"30s"`},
		{"pipeline", "gc_percent", "20"},
		{"output.nats", "subject_prefix", `"forecast"`},
		{"output.influxdb", "measurement", `"forecast"`},
		{"output.influxdb", "metric_batch_size", "1000"},
		{"output.influxdb", "metric_buffer_limit", "10000"},
		{"output.influxdb", "flush_interval", `"10s"`},
		{"output.influxdb", "timeout", `"5s"`},
		{"state", "checkpoint_interval", `"30s"`},
		{"state", "bucket", `"forecastd-state"`},
		{"state", "lease_bucket", `"forecastd-leases"`},
		{"state", "lease_ttl", `"4s"`},
		{"history", "lookback", `"14d"`},
		{"history", "concurrency", "4"},
		{"history", "timeout", `"30s"`},
		{"history", "max_points", "200000"},
		{"history", "max_queued", "16384"},
		{"history", "field", `"y"`},
	} {
		if !bytes.Contains(Reference(), []byte("| `"+c.key+"` | ")) || !strings.Contains(string(Reference()), "`"+c.key+"` | "+typeOf(c.value)+" | `"+c.value+"`") {
			t.Errorf("%s.%s: the reference does not show the default %s", c.table, c.key, c.value)
		}
		got, err := Load(writeFile(t, strings.Replace(base, "["+c.table+"]\n", "["+c.table+"]\n"+c.key+" = "+c.value+"\n", 1)))
		if err != nil {
			t.Errorf("%s.%s = %s: %v", c.table, c.key, c.value, err)
			continue
		}
		if a, b := withDefaults(got), withDefaults(want); !reflect.DeepEqual(a, b) {
			t.Errorf("%s.%s = %s is not the default", c.table, c.key, c.value)
		}
	}
}

// typeOf names the type of a TOML value as the reference does.
func typeOf(v string) string {
	switch {
	case strings.HasPrefix(v, "["):
		return "list of strings"
	case strings.HasPrefix(v, `"`) && regexp.MustCompile(`^"[0-9]+[smhd]"$`).MatchString(v):
		return "duration"
	case strings.HasPrefix(v, `"`):
		return "string"
	}
	return "integer"
}

// TestExample: config.example.toml decodes without a problem, and so does
// every key its comments show (a line "# key = value" uncommented): each
// is a key of the schema.
func TestExample(t *testing.T) {
	if _, problems, err := Decode(examplePath); err != nil || len(problems) > 0 {
		t.Fatalf("config.example.toml: %v %v", err, problems)
	}
	if _, err := Load(examplePath); err != nil {
		t.Fatalf("config.example.toml: %v", err)
	}
	b, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	commented := regexp.MustCompile(`(?m)^#\s*(\[\[?[a-z_.]+\]\]?|[a-z_]+ = .*)$`)
	shown := commented.FindAllSubmatch(b, -1)
	if len(shown) < 20 {
		t.Fatalf("only %d commented-out keys found", len(shown))
	}
	uncommented := commented.ReplaceAll(b, []byte("$1"))
	_, problems, err := Decode(writeFile(t, string(uncommented)))
	if err != nil {
		t.Fatalf("with the commented-out keys: %v", err)
	}
	for _, p := range problems {
		t.Errorf("a key the example shows: %v", p)
	}
}

// TestUnknownKeyLines: every problem is placed on its key's line, arrays
// of tables apart, with the nearest known key.
func TestUnknownKeyLines(t *testing.T) {
	p := writeFile(t, `[input]
subjects = ["a"]

[[rules]]
match = "a"
dim = 3

[[rules]]
match = "b"
dimm = 3
horizon = "x"

[pipeline]
idle_ttl = 5
memory_budget = "lots"
`)
	_, err := Load(p)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		p + `:10: unknown key "rules[1].dimm" (did you mean "dim"?)`,
		p + `:11: rules[1].horizon: want an integer, got the string "x"`,
		p + `:14: pipeline.idle_ttl: durations are strings, like "30s" or "1h"; got the integer 5`,
		p + `:15: pipeline.memory_budget: invalid size "lots"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// TestSyntaxErrorLine: a TOML syntax error is reported on its line.
func TestSyntaxErrorLine(t *testing.T) {
	p := writeFile(t, "[input]\nsubjects = [\"a\"]\n\n[model]\ndim = = 3\n")
	_, err := Load(p)
	if err == nil || !strings.HasPrefix(err.Error(), p+":5: ") {
		t.Errorf("error %v, want it on line 5", err)
	}
}

// TestModelFlags: the flags of the [model] keys are the schema's keys,
// with the key's doc and default as usage, and set the key.
func TestModelFlags(t *testing.T) {
	var m pipeline.Keys
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	AddModelFlags(fs, &m, "gamma")
	if err := fs.Parse([]string{"--dim", "7", "--model", "norma", "--combine=false", "--seasons", "12h"}); err != nil {
		t.Fatal(err)
	}
	if m.Dim == nil || *m.Dim != 7 || *m.Kind != "norma" || *m.Combine || *m.Seasons != "12h" || m.Delay != nil {
		t.Errorf("flags set %+v", m)
	}
	if fs.Lookup("gamma") != nil {
		t.Error("a skipped key has a flag")
	}
	for _, key := range pipeline.KeyNames() {
		name := key
		if key == "kind" {
			name = "model"
		}
		if key == "gamma" {
			continue
		}
		fl := fs.Lookup(name)
		if fl == nil {
			t.Errorf("%s: no flag", key)
			continue
		}
		if fl.Usage == "" {
			t.Errorf("%s: no usage", key)
		}
	}
	name, usage := flag.UnquoteUsage(fs.Lookup("dim"))
	if name != "B" || usage != "embedding dimension B (default 5)" {
		t.Errorf("dim's usage: %q %q", name, usage)
	}
	if err := fs.Parse([]string{"--dim", "x"}); err == nil {
		t.Error("--dim x accepted")
	}
}

// toyKind is a model kind registered by this test alone, over AOSVR's
// registration, with one key of its own: the key decodes into Params, has
// a flag and a section of the reference, with no change to this package.
type toyKind struct{ pipeline.ModelKind }

func (toyKind) Name() string { return "toy" }
func (toyKind) Keys() []pipeline.ModelKey {
	return []pipeline.ModelKey{{Key: "toy_depth", Type: pipeline.KeyInt, Usage: "toy `DEPTH`"}}
}
func (toyKind) Set(cfg *pipeline.Config, key string, v any) error {
	if v.(int) < 1 {
		return fmt.Errorf("must be at least 1, got %d", v)
	}
	cfg.Params = v
	return nil
}
func (toyKind) StateTags() []uint64 { return []uint64{41} }

var _ = pipeline.RegisterModel(toyKind{pipeline.AOSVR.Model()})

func TestRegisteredKindKeys(t *testing.T) {
	p := writeFile(t, "[input]\nsubjects = [\"a\"]\n[model]\nkind = \"toy\"\ntoy_depth = 3\n[[rules]]\nmatch = \"b\"\ntoy_depth = 0\n[[rules]]\nmatch = \"c\"\ntoy_dept = 2\n")
	_, err := Load(p)
	for _, want := range []string{
		p + `:8: rules[0].toy_depth (match "b"): must be at least 1, got 0`,
		p + `:11: unknown key "rules[1].toy_dept" (did you mean "toy_depth"?)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	c, _, err := Decode(p)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := c.Model.Config()
	if err != nil || pc.Kind.String() != "toy" || pc.Params != 3 {
		t.Errorf("[model]: %v, kind %v, params %v", err, pc.Kind, pc.Params)
	}
	var m pipeline.Keys
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	AddModelFlags(fs, &m)
	if err := fs.Parse([]string{"--toy_depth", "5"}); err != nil || m.Params["toy_depth"] != 5 {
		t.Errorf("--toy_depth: %v, params %v", err, m.Params)
	}
	if !bytes.Contains(Reference(), []byte("### Keys of kind toy")) || !bytes.Contains(Reference(), []byte("| `toy_depth` | integer |  | toy `DEPTH` |")) {
		t.Error("the reference lacks the toy kind's key")
	}
}

// TestPipelineTags: each `pipeline` tag names a field of pipeline.Config
// of the key's type (a duration for a string), so that setDirect can set
// it.
func TestPipelineTags(t *testing.T) {
	cfg := reflect.ValueOf(&pipeline.Config{}).Elem()
	n := 0
	for _, f := range reflect.VisibleFields(reflect.TypeFor[pipeline.Keys]()) {
		path := f.Tag.Get("pipeline")
		if path == "" {
			continue
		}
		n++
		d := cfg
		for _, name := range strings.Split(path, ".") {
			if d.Kind() != reflect.Struct {
				d = reflect.Value{}
				break
			}
			d = d.FieldByName(name)
		}
		switch {
		case !d.IsValid() || !d.CanSet():
			t.Errorf("%s: pipeline.Config has no field %s", f.Tag.Get("toml"), path)
		case d.Type() == reflect.TypeFor[time.Duration]():
			if f.Type.Elem().Kind() != reflect.String {
				t.Errorf("%s: a duration from a %v", f.Tag.Get("toml"), f.Type.Elem())
			}
		case d.Type() != f.Type.Elem():
			t.Errorf("%s: %s is a %v, the key a %v", f.Tag.Get("toml"), path, d.Type(), f.Type.Elem())
		}
	}
	if n < 20 {
		t.Errorf("only %d keys with a pipeline tag", n)
	}
}

// TestLoadRefusesWhatIsNotAFile: a named pipe (whose open and read wait
// for a writer), a device and a directory are refused at once, naming
// what they are; a file larger than a configuration may be, too.
func TestLoadRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, bytes.Repeat([]byte("# a comment line\n"), maxFileSize/16), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{fifo, "not a regular file (a named pipe)"},
		{"/dev/zero", "not a regular file (a device)"},
		{dir, "not a regular file (a directory)"},
		{big, "more than the 4194304 bytes a configuration file may have"},
	} {
		done := make(chan error, 1)
		go func() { _, err := Load(c.path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want %q", c.path, err, c.want)
			}
		case <-time.After(time.Minute): // a hang only
			t.Fatalf("%s: Load still reading after a minute", c.path)
		}
	}
}

// TestLoadUnreadable: a file forecastd may not read says which group
// must be able to: forecastd-config, the systemd unit's.
func TestLoadUnreadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "forecastd.toml")
	if err := os.WriteFile(path, []byte("log_format = \"text\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	if os.Geteuid() == 0 {
		// root reads any file: the error a user gets is made by hand.
		err = fileError(path, &fs.PathError{Op: "open", Path: path, Err: fs.ErrPermission})
	} else {
		if err := os.Chmod(path, 0); err != nil {
			t.Fatal(err)
		}
		_, err = Load(path)
	}
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "forecastd-config") || !strings.Contains(err.Error(), "chgrp forecastd-config "+path) {
		t.Fatalf("unreadable: %v, want it to name the group forecastd-config", err)
	}
}
