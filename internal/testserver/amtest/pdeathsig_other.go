//go:build !linux

package amtest

import "os/exec"

// dieWithParent does nothing where there is no parent-death signal.
func dieWithParent(*exec.Cmd) {}
