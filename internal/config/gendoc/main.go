// Command gendoc writes the configuration reference generated from the
// schema of internal/config (config.Reference), by default to
// docs/configuration.md.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/forecastd/forecastd/internal/config"
)

func main() {
	out := flag.String("o", "docs/configuration.md", "the `FILE` to write")
	flag.Parse()
	if err := os.WriteFile(*out, config.Reference(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
}
