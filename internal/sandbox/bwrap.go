package sandbox

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// systemDirs are the machine's directories every contained process sees
// read-only, when they exist: programs, libraries and /etc. A symbolic
// link among them (/bin -> usr/bin) is recreated as the same link.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix/store"}

// systemSecrets are files of the system's directories no contained
// process reads, even as root: password hashes and the host's SSH keys.
var systemSecrets = []string{"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/ssh/ssh_host_*_key"}

// baseFlags are the namespaces and protections of every process: it dies
// with its parent (the worker), has its own session (no terminal
// injection), PID, IPC, UTS and cgroup namespaces, and no capabilities
// (as root bwrap would keep them). bwrap sets no_new_privs itself.
//
// The command is PID 1 of its namespace (--as-pid-1): when it exits the
// kernel kills every process left in the namespace before bwrap's wait
// for it returns, so the command's Wait returns only when nothing it
// started is alive. (With bwrap's own init as PID 1, bwrap exits as soon
// as the command does, and what it left behind dies a moment later.) The
// price: orphans of the command are its children, and signals it has no
// handler for are ignored (SIGKILL from outside still works).
var baseFlags = []string{
	"--die-with-parent", "--new-session",
	"--unshare-pid", "--as-pid-1", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
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
	tmp := s.cfg.TmpBytes
	if tmp <= 0 {
		tmp = DefaultTmpBytes
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev", "--size", strconv.FormatInt(tmp, 10), "--tmpfs", privateTmp)

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
	for _, d := range []string{p.Work, p.Home} {
		if d != "" {
			ms = append(ms, mount{kindRW, d})
		}
	}
	for _, m := range ms {
		visible = append(visible, m.path)
	}
	for _, m := range p.Masked {
		ms = append(ms, mount{kindMask, m})
	}
	hide := s.cfg.Hide
	for _, pattern := range systemSecrets {
		matches, _ := filepath.Glob(pattern)
		hide = append(hide[:len(hide):len(hide)], matches...)
	}
	for _, h := range hide {
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
	if p.Work == "" {
		a = append(a, "--dir", freshWork)
	}
	// The root (bwrap's own tmpfs, holding the mount points) is made
	// read-only last: a write outside the given paths fails.
	return append(a, "--remount-ro", "/", "--chdir", spec.dir())
}

// Visible reports whether p (absolute, clean) lies in a path a process
// contained by spec sees: a system directory (through its link, for /bin
// and the like), the config's ReadOnly or one of spec's paths. With
// ModeNone every path is visible. Masks are not considered.
func (s *Sandbox) Visible(spec Spec, p string) bool {
	if s.None() {
		return true
	}
	roots := append([]string(nil), s.cfg.ReadOnly...)
	for _, d := range systemDirs {
		if target, err := os.Readlink(d); err == nil {
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(d), target)
			}
			roots = append(roots, d, target)
		} else {
			roots = append(roots, d)
		}
	}
	sp := spec.Paths
	roots = append(append(append(roots, sp.ReadOnly...), sp.Writable...), sp.Work, sp.Home)
	for _, r := range roots {
		if r != "" && below(p, r) {
			return true
		}
	}
	return false
}
