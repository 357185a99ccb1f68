package sandbox

import (
	"os"
	"sort"
	"strings"
)

// systemDirs are the machine's directories every contained process sees
// read-only, when they exist: programs, libraries and /etc. A symbolic
// link among them (/bin -> usr/bin) is recreated as the same link.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix/store"}

// baseFlags are the namespaces and protections of every process: it dies
// with its parent (the worker), has its own session (no terminal
// injection), PID, IPC, UTS and cgroup namespaces, and no capabilities
// (as root bwrap would keep them). bwrap sets no_new_privs itself.
var baseFlags = []string{
	"--die-with-parent", "--new-session",
	"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
	"--cap-drop", "ALL",
}

// Kinds of mount, in the order they apply to one depth: a read-only bind,
// then a writable one, then a mask, so a mask wins over a bind of the same
// path and a writable bind over a read-only one.
const (
	kindRO = iota
	kindRW
	kindMask
)

type mount struct {
	kind int
	path string
}

// depth is how many components p has: /a/b is 2.
func depth(p string) int { return strings.Count(strings.TrimSuffix(p, "/"), "/") }

// below reports whether p is root or lies below it.
func below(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

// args are bwrap's arguments before the command: the base flags, the
// system's directories, /proc, /dev and /tmp, then the spec's and the
// config's paths shallowest first, the environment's HOME, and --chdir.
func (s *Sandbox) args(spec Spec) []string {
	a := append([]string(nil), baseFlags...)
	if spec.NoNetwork {
		a = append(a, "--unshare-net")
	}
	var visible []string
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
			visible = append(visible, d)
		}
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev", "--tmpfs", privateTmp)

	var ms []mount
	for _, p := range s.cfg.ReadOnly {
		if _, err := os.Stat(p); err == nil { // a toolchain missing on this node is left out
			ms = append(ms, mount{kindRO, p})
		}
	}
	p := spec.Paths
	for _, r := range p.ReadOnly {
		ms = append(ms, mount{kindRO, r})
	}
	for _, w := range p.Writable {
		ms = append(ms, mount{kindRW, w})
	}
	ms = append(ms, mount{kindRW, p.Work})
	if p.Home != "" {
		ms = append(ms, mount{kindRW, p.Home})
	}
	for _, m := range ms {
		visible = append(visible, m.path)
	}
	for _, m := range p.Masked {
		ms = append(ms, mount{kindMask, m})
	}
	for _, h := range s.cfg.Hide {
		for _, v := range visible {
			if below(h, v) {
				ms = append(ms, mount{kindMask, h})
				break
			}
		}
	}
	sort.SliceStable(ms, func(i, j int) bool {
		di, dj := depth(ms[i].path), depth(ms[j].path)
		if di != dj {
			return di < dj
		}
		return ms[i].kind < ms[j].kind
	})
	var readOnly []string // masks made read-only once every mount below them is made
	for _, m := range ms {
		switch m.kind {
		case kindRO:
			a = append(a, "--ro-bind", m.path, m.path)
		case kindRW:
			a = append(a, "--bind", m.path, m.path)
		case kindMask:
			fi, err := os.Stat(m.path)
			switch {
			case err != nil: // nothing there to hide
			case fi.IsDir():
				a = append(a, "--tmpfs", m.path)
				readOnly = append(readOnly, m.path)
			default:
				a = append(a, "--ro-bind", os.DevNull, m.path)
			}
		}
	}
	for _, m := range readOnly {
		a = append(a, "--remount-ro", m)
	}
	if p.Home == "" {
		a = append(a, "--dir", freshHome)
	}
	return append(a, "--chdir", spec.dir())
}
