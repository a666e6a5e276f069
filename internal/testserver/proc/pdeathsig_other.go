//go:build !linux

package proc

import "os/exec"

// dieWithParent does nothing where there is no parent-death signal.
func dieWithParent(*exec.Cmd) {}
