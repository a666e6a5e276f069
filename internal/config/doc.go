// Package config is forecastd's configuration file. It declares no key:
// each table is its component's struct (natsconn.Config for [nats],
// sources.InputConfig and ConsumerConfig for [input], pipeline.Keys for
// [model], runner.RunnerKeys and memory.Config for [pipeline],
// statestore.Config and partition.StoreConfig for [state], the sinks'
// configurations for [output.*], history.WarmStart for [history], …),
// with its keys, docs, defaults (WithDefaults) and validation (Validate);
// see package schema for the tags. This package composes them (Config),
// and does what no component can: the strict decoding of a file with
// every problem's file and line, the checks across tables, the layers of
// [model] ([model] ← [[rules]] ← [[resolutions]] ← flags), the flags of
// the [model] keys (AddModelFlags), check-config, and the reference,
// docs/configuration.md, generated from the same tags (Reference; go
// generate writes it, and a test fails when the committed file is stale).
//
// What registers in a registry brings its keys with no change here: a
// model kind (pipeline.RegisterModel) its keys of [model], decoded into
// pipeline.Keys.Params; a payload format (sources.RegisterFormat) its
// keys of [input] (sources.Configurable); a sink (sinks.Register) its
// table [output.<name>] (sinks.Configurable).
//
// Decoding is strict: every problem of a file is reported at once, each
// as "FILE:LINE: key: what is wrong" (an unknown key with the nearest
// known one, a value of the wrong type, an invalid value). It uses
// go-toml/v2 rather than BurntSushi/toml because only go-toml gives the
// position of every key: its parser (go-toml/v2/unstable, pinned: see
// keylines.go) yields each key with its line, array-of-tables entries
// apart, so that a problem found after decoding, by validation, is
// placed on its key's line. BurntSushi/toml's MetaData lists keys (Keys,
// Undecoded) without positions. go-toml's own strict mode
// (DisallowUnknownFields) stops at the first value of a wrong type and
// suggests no key, so values are decoded here, key by key, from the
// document go-toml reads.
package config

//go:generate go run ./gendoc -o ../../docs/configuration.md
