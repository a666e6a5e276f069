package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"slices"
)

// addModelFlags declares a flag for every [model] key of m but those in
// skip, named as the key (kind's flag is --model), so that a subcommand's
// flags and the configuration file's keys are one list.
func addModelFlags(fs *flag.FlagSet, m *ModelConfig, skip ...string) {
	mv := reflect.ValueOf(m).Elem()
	for i, key := range modelKeys() {
		if slices.Contains(skip, key) {
			continue
		}
		name := key
		if key == "kind" {
			name = "model"
		}
		fs.Var(modelFlag{field: mv.Field(i)}, name, modelFlagUsage(key))
	}
	for _, mk := range paramKeys() {
		if !slices.Contains(skip, mk.Key) {
			fs.Var(paramFlag{m: m, mk: mk}, mk.Key, mk.Usage)
		}
	}
}

// parseOperands parses args with fs, flags before or after the operands
// (files), and returns the operands. -h prints usage and fs's flags on
// stderr and returns flag.ErrHelp; any other error is a usageError ending
// with a line pointing at -h for the subcommand cmd, not the whole usage.
func parseOperands(fs *flag.FlagSet, args []string, cmd, usage string, stderr io.Writer) ([]string, error) {
	var operands []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stderr, usage)
				fs.SetOutput(stderr)
				fs.PrintDefaults()
				return nil, err
			}
			return nil, usageError{fmt.Errorf("%w\nrun \"forecastd %s -h\" for the flags", err, cmd)}
		}
		if fs.NArg() == 0 {
			return operands, nil
		}
		operands = append(operands, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
