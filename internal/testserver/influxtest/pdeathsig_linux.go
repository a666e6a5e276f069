package influxtest

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill influxd if the test binary dies
// without stopping it (a panic, a timeout, a kill): a shared server
// outlives the test that started it.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
