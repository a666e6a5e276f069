package statestore

import (
	"testing"

	"github.com/forecastd/forecastd/pipeline"
)

// benchStates are warm series of each kind with the default settings
// (AOSVR W = 200; SOG-SVR m ≤ 24; NORMA τ = 1000), after 1000 points.
func benchStates(b *testing.B) []struct {
	name string
	cfg  pipeline.Config
	s    *pipeline.Series
} {
	var out []struct {
		name string
		cfg  pipeline.Config
		s    *pipeline.Series
	}
	for _, name := range []string{"aosvr_W200", "sogsvr", "norma"} {
		cfg := configs()[name]
		out = append(out, struct {
			name string
			cfg  pipeline.Config
			s    *pipeline.Series
		}{name, cfg, series(b, name, cfg, 1000)})
	}
	return out
}

// BenchmarkCheckpointSave: Export, Encode and Save (two fsyncs) of one
// series; the file size is reported as bytes/state.
func BenchmarkCheckpointSave(b *testing.B) {
	for _, bs := range benchStates(b) {
		st, _ := bs.s.Export()
		size := float64(len(Encode(st)))
		b.Run(bs.name+"/export", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bs.s.Export(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bs.name+"/encode", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				Encode(st)
			}
		})
		b.Run(bs.name+"/export+encode+save", func(b *testing.B) {
			s, err := Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				st, err := bs.s.Export()
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Save(bs.name, st); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(size, "bytes/state")
		})
	}
}

// BenchmarkCheckpointLoad: Load (read and Decode) and Restore of one
// series.
func BenchmarkCheckpointLoad(b *testing.B) {
	for _, bs := range benchStates(b) {
		st, _ := bs.s.Export()
		data := Encode(st)
		b.Run(bs.name+"/decode", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bs.name+"/restore", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := pipeline.Restore(bs.name, bs.cfg, st); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bs.name+"/load+decode+restore", func(b *testing.B) {
			s, err := Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Save(bs.name, st); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				got, err := s.Load(bs.name)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := pipeline.Restore(bs.name, bs.cfg, got); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data)), "bytes/state")
		})
	}
}
