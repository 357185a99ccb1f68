//go:build !unix

package runner

import "os/exec"

// ownGroup: without process groups, only the child itself is killed when
// the command's context is done (exec.CommandContext's default).
func ownGroup(*exec.Cmd) {}

// killGroup has nothing to do without process groups.
func killGroup(*exec.Cmd) {}
