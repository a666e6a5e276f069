package amtest

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill alertmanager if the test binary dies
// without stopping it (a panic, a timeout, a kill).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
