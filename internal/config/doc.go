// Package config is forecastd's configuration file: its schema (the
// structs of config.go, each key one field whose tags give its TOML name,
// its doc, its default and its flag's value name), its strict decoding,
// its validation, the mapping of [model] and its layers ([model] ←
// [[rules]] ← [[resolutions]] ← flags) onto pipeline.Config, the flags of
// the [model] keys (AddModelFlags), and the reference, docs/configuration.md,
// generated from the same tags (Reference; go generate writes it, and a
// test fails when the committed file is stale).
//
// A model kind registered in pipeline (pipeline.RegisterModel) brings its
// own keys (pipeline.ModelKey): they are decoded into ModelConfig.Params,
// get flags and a section of the reference, with no change here.
//
// Decoding is strict: every problem of a file is reported at once, each
// as "FILE:LINE: key: what is wrong" (an unknown key with the nearest
// known one, a value of the wrong type, an invalid value). It uses
// go-toml/v2 rather than BurntSushi/toml because only go-toml gives the
// position of every key: its parser (go-toml/v2/unstable) yields each key
// with its line, array-of-tables entries apart, so that a problem found
// after decoding, by validation, is placed on its key's line.
// BurntSushi/toml's MetaData lists keys (Keys, Undecoded) without
// positions; its positions come only with the first error it stops at,
// and [[rules]] entries share one position. go-toml's own strict mode
// (DisallowUnknownFields) also stops at the first value of a wrong type
// and suggests no key, so values are decoded here, key by key, from the
// document go-toml reads.
package config

//go:generate go run ./gendoc -o ../../docs/configuration.md
