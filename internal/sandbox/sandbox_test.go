package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/sandbox/sandboxtest"
)

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"zero is bubblewrap", Config{}, ""},
		{"none", Config{Mode: ModeNone}, ""},
		{"unknown mode", Config{Mode: "docker"}, `sandbox.mode: "docker" is not a mode`},
		{"relative read_only", Config{ReadOnly: []string{"/opt/go", "go/bin"}}, `sandbox.read_only[1]: "go/bin" is not an absolute path`},
		{"the root", Config{ReadOnly: []string{"/"}}, `sandbox.read_only[0]: "/" would show the whole machine`},
		{"relative hide", Config{Hide: []string{"data"}}, `sandbox.hide[0]: "data" is not an absolute path`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.cfg)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.cfg.Mode == ModeNone, s.None())
			require.Contains(t, []string{ModeBubblewrap, ModeNone}, s.Mode())
		})
	}
}

func TestBuildEnv(t *testing.T) {
	t.Parallel()
	got := buildEnv([]string{"PATH=/usr/bin", "HOME=/root", "TMPDIR=/var/tmp", "XDG_CONFIG_HOME=/root/.config", "bad", "A=1", "A=2"}, "/h", "/tmp")
	require.Equal(t, []string{
		"A=2", "HOME=/h", "PATH=/usr/bin", "TMPDIR=/tmp",
		"XDG_CACHE_HOME=/h/.cache", "XDG_CONFIG_HOME=/h/.config", "XDG_DATA_HOME=/h/.local/share", "XDG_STATE_HOME=/h/.local/state",
	}, got)
}

// The spec's paths apply shallowest first: the mirror read-only, the
// mask over its worktrees directory, then the task's admin directory and
// the objects writable; nothing binds the root; the network is cut only
// when asked.
func TestArgsOrder(t *testing.T) {
	t.Parallel()
	root := tempDir(t)
	mirror := filepath.Join(root, "mirror.git")
	admin := filepath.Join(mirror, "worktrees", "w1")
	objects := filepath.Join(mirror, "objects")
	wt := filepath.Join(root, "wt", "w1")
	for _, d := range []string{admin, objects, wt} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	s, err := New(Config{Hide: []string{root}})
	require.NoError(t, err)
	spec := Spec{Paths: Paths{Work: wt, Writable: []string{admin, objects}, ReadOnly: []string{mirror},
		Masked: []string{filepath.Join(mirror, "worktrees")}, Home: filepath.Join(root, "homes", "w1")}}
	a := s.args(spec)
	require.NotContains(t, a, "--unshare-net")
	require.Equal(t, []string{"--chdir", wt}, a[len(a)-2:])
	at := func(flag, path string) int {
		for i := 0; i+1 < len(a); i++ {
			if a[i] == flag && a[i+1] == path {
				return i
			}
		}
		t.Fatalf("%s %s not in %q", flag, path, a)
		return -1
	}
	require.Less(t, at("--ro-bind", mirror), at("--tmpfs", filepath.Join(mirror, "worktrees")))
	require.Less(t, at("--tmpfs", filepath.Join(mirror, "worktrees")), at("--bind", admin))
	require.Less(t, at("--ro-bind", mirror), at("--bind", objects))
	require.Less(t, at("--tmpfs", "/tmp"), at("--bind", wt))
	for i := range a {
		if a[i] == "--bind" || a[i] == "--ro-bind" {
			require.NotEqual(t, "/", a[i+1], "the root is never bound")
		}
	}
	require.NotContains(t, a, root, "a hidden path above every visible one needs no mask")

	spec.NoNetwork = true
	require.Contains(t, s.args(spec), "--unshare-net")
}

// run runs script under s with spec and returns its stdout, stderr and
// error.
func run(t *testing.T, s *Sandbox, spec Spec, script string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cmd, err := s.Command(ctx, spec, []string{"sh", "-c", script})
	require.NoError(t, err)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// A contained process sees its paths under their real names and nothing
// else of the machine, writes only where it may, has no capabilities and
// no new privileges, a private HOME, and none of the worker's variables.
func TestContained(t *testing.T) {
	sandboxtest.Require(t)
	t.Parallel()
	root := tempDir(t)
	mk := func(p ...string) string {
		d := filepath.Join(append([]string{root}, p...)...)
		require.NoError(t, os.MkdirAll(d, 0o755))
		return d
	}
	ro, rw, work := mk("ro"), mk("rw"), mk("work")
	masked := mk("ro", "masked")
	shown := mk("ro", "masked", "shown")
	require.NoError(t, os.WriteFile(filepath.Join(masked, "other"), []byte("other task"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ro, "config"), []byte("keep"), 0o644))
	data := mk("ro", "data")
	require.NoError(t, os.WriteFile(filepath.Join(data, "store"), []byte("secret store"), 0o644))
	cfgFile := filepath.Join(ro, "drover.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("token: x"), 0o644))
	home := filepath.Join(root, "home")
	worker := secretHolder(t)

	s, err := New(Config{Hide: []string{data, cfgFile}})
	require.NoError(t, err)
	spec := Spec{
		Paths: Paths{Work: work, Writable: []string{rw, shown}, ReadOnly: []string{ro}, Masked: []string{masked}, Home: home},
		Env:   []string{"PATH=/usr/bin:/bin", "DROVER_ROLE=implementer"},
	}
	checks := []struct{ name, script, want string }{
		{"no new privileges", `grep NoNewPrivs /proc/self/status | tr -d '\t '`, "NoNewPrivs:1"},
		{"no capabilities", `grep CapEff /proc/self/status | tr -d '\t '`, "CapEff:0000000000000000"},
		{"cwd is the real path", `pwd -P`, work},
		{"env is built", `env | grep -v ^PWD= | sort | tr '\n' ' '`, "DROVER_ROLE=implementer HOME=" + home + " PATH=/usr/bin:/bin TMPDIR=/tmp " +
			"XDG_CACHE_HOME=" + home + "/.cache XDG_CONFIG_HOME=" + home + "/.config XDG_DATA_HOME=" + home + "/.local/share XDG_STATE_HOME=" + home + "/.local/state"},
		{"own pid namespace", `echo $$`, "1"},
		{"worker's environment unread", fmt.Sprintf(`{ env; cat /proc/1/environ /proc/%d/environ /proc/%d/environ /proc/*/environ 2>/dev/null; } | tr '\0' '\n' | grep -c s3cret || true`, os.Getpid(), worker), "0"},
		{"worker's /proc absent", fmt.Sprintf(`[ -e /proc/%d ] && echo visible; true`, os.Getpid()), ""},
		{"machine not visible", `for d in /root /work /home /var /srv /mnt; do [ -e $d ] && echo $d; done; true`, ""},
		{"home writable", `echo hi > "$HOME/f" && cat "$HOME/f"`, "hi"},
		{"tmp writable", `echo hi > /tmp/f && cat /tmp/f`, "hi"},
		{"work writable", `echo hi > f && cat f`, "hi"},
		{"writable path", `echo hi > ` + rw + `/f && cat ` + rw + `/f`, "hi"},
		{"read-only path", `echo no > ` + ro + `/config 2>/dev/null; cat ` + ro + `/config`, "keep"},
		{"masked dir empty", `ls -A ` + masked, "shown"},
		{"deeper path shown in a mask", `echo hi > ` + shown + `/f && cat ` + shown + `/f`, "hi"},
		{"masked dir read-only", `touch ` + masked + `/x 2>/dev/null && echo wrote; true`, ""},
		{"hidden dir", `ls -A ` + data, ""},
		{"hidden file", `cat ` + cfgFile + ` 2>/dev/null; true`, ""},
		{"root read-only", `mkdir /x 2>/dev/null && echo wrote; true`, ""},
		{"a path not given is not the machine's", `mkdir ` + root + `/new 2>/dev/null; true`, ""},
		{"system secrets", `cat /etc/shadow /etc/ssh/ssh_host_*_key 2>/dev/null | wc -c`, "0"},
		{"system read-only", `touch /usr/x 2>/dev/null && echo wrote; touch /etc/x 2>/dev/null && echo wrote; true`, ""},
	}
	for _, tc := range checks {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, err := run(t, s, spec, tc.script)
			require.NoError(t, err, stderr)
			require.Equal(t, tc.want, strings.TrimSpace(out), stderr)
		})
	}
	require.NoDirExists(t, filepath.Join(root, "new"), "under /tmp it lands in the private /tmp")
	got, err := os.ReadFile(filepath.Join(ro, "config"))
	require.NoError(t, err)
	require.Equal(t, "keep", string(got))
	entries, err := os.ReadDir(masked)
	require.NoError(t, err)
	require.Len(t, entries, 2, "only other and shown: nothing was written in the mask")
}

// With no Home, HOME is a fresh private directory; with no Work, so is
// the working directory.
func TestFreshHomeAndWork(t *testing.T) {
	sandboxtest.Require(t)
	t.Parallel()
	s, err := New(Config{})
	require.NoError(t, err)
	out, stderr, err := run(t, s, Spec{}, `echo x > "$HOME/f" && echo "$HOME" && ls -A "$HOME" && echo y > g && pwd && ls`)
	require.NoError(t, err, stderr)
	require.Equal(t, freshHome+"\nf\n"+freshWork+"\ng", strings.TrimSpace(out))
}

// NoNetwork cuts the network: a listener the test opened on loopback is
// reached with the network and not without it.
func TestNoNetwork(t *testing.T) {
	sandboxtest.Require(t)
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }() // the test is over
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close() // the test is over
		}
	}()
	s, err := New(Config{})
	require.NoError(t, err)
	script := fmt.Sprintf(`bash -c 'echo > /dev/tcp/127.0.0.1/%d' 2>/dev/null && echo connected || echo refused`, ln.Addr().(*net.TCPAddr).Port)
	for _, tc := range []struct {
		noNetwork bool
		want      string
	}{{false, "connected"}, {true, "refused"}} {
		out, stderr, err := run(t, s, Spec{Paths: Paths{Work: tempDir(t)}, Env: []string{"PATH=/usr/bin:/bin"}, NoNetwork: tc.noNetwork}, script)
		require.NoError(t, err, stderr)
		require.Equal(t, tc.want, strings.TrimSpace(out), "NoNetwork %v", tc.noNetwork)
	}
}

// ModeNone runs the command plainly, in Work, with the same built
// environment and HOME made; it refuses what it cannot do.
func TestModeNone(t *testing.T) {
	t.Parallel()
	s, err := New(Config{Mode: ModeNone})
	require.NoError(t, err)
	require.NoError(t, s.Check(context.Background()))
	work := tempDir(t)
	home := filepath.Join(tempDir(t), "h")
	out, stderr, err := run(t, s, Spec{Paths: Paths{Work: work, Home: home}, Env: []string{"PATH=/usr/bin:/bin"}},
		`pwd -P; echo "$HOME"; env | grep -c s3cret || true`)
	require.NoError(t, err, stderr)
	require.Equal(t, work+"\n"+home+"\n0", strings.TrimSpace(out))
	require.DirExists(t, home)

	_, err = s.Command(context.Background(), Spec{Paths: Paths{Work: work}}, []string{"true"})
	require.ErrorContains(t, err, "Paths.Work and Paths.Home are required")
	_, err = s.Command(context.Background(), Spec{Paths: Paths{Work: work, Home: home}, NoNetwork: true}, []string{"true"})
	require.ErrorContains(t, err, "needs the bubblewrap sandbox")
}

func TestCommandRefusesBadSpecs(t *testing.T) {
	t.Parallel()
	s, err := New(Config{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		spec    Spec
		argv    []string
		wantErr string
	}{
		{"no argv", Spec{Paths: Paths{Work: "/w"}}, nil, "argv: empty"},
		{"relative work", Spec{Paths: Paths{Work: "w"}}, []string{"true"}, `Paths.Work: "w" is not a clean absolute path`},
		{"root writable", Spec{Paths: Paths{Work: "/w", Writable: []string{"/"}}}, []string{"true"}, `Paths.Writable[0]: "/" would show the whole machine`},
		{"unclean read-only", Spec{Paths: Paths{Work: "/w", ReadOnly: []string{"/a/../b"}}}, []string{"true"}, `Paths.ReadOnly[0]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Command(context.Background(), tc.spec, tc.argv)
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

// Check passes where bwrap runs, and a missing or failing bwrap is
// ErrUnavailable with its reason.
func TestCheck(t *testing.T) {
	t.Parallel()
	s, err := New(Config{})
	require.NoError(t, err)
	if s.bwrap != "" {
		require.NoError(t, s.Check(context.Background()))
	}

	s.bwrap = ""
	err = s.Check(context.Background())
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorContains(t, err, "bwrap not found")

	fake := filepath.Join(tempDir(t), "bwrap")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"), 0o755))
	s.bwrap = fake
	err = s.Check(context.Background())
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorContains(t, err, "No permissions to create new namespace")
	require.NotErrorIs(t, err, context.DeadlineExceeded)
}

func TestVisible(t *testing.T) {
	t.Parallel()
	s, err := New(Config{ReadOnly: []string{"/srv/tools"}})
	require.NoError(t, err)
	spec := Spec{Paths: Paths{Work: "/data/wt/w1", ReadOnly: []string{"/data/mirror.git"}, Home: "/data/homes/w1"}}
	for p, want := range map[string]bool{
		"/usr/bin/git": true, "/srv/tools/agent": true, "/data/wt/w1/run.sh": true, "/data/homes/w1/bin/x": true,
		"/data/mirror.git/hooks/x": true, "/root/go/bin/agent": false, "/data/wt/w2/x": false, "/data/wt/w1x": false,
	} {
		require.Equal(t, want, s.Visible(spec, p), p)
	}
	if fi, err := os.Lstat("/bin"); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		require.True(t, s.Visible(spec, "/bin/sh"))
	}
	none, err := New(Config{Mode: ModeNone})
	require.NoError(t, err)
	require.True(t, none.Visible(spec, "/root/go/bin/agent"))
}

// Paths.Env reaches the process in both modes, over Spec.Env.
func TestPathsEnv(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{ModeBubblewrap, ModeNone} {
		if mode == ModeBubblewrap {
			sandboxtest.Require(t)
		}
		s, err := New(Config{Mode: mode})
		require.NoError(t, err)
		spec := Spec{Paths: Paths{Work: tempDir(t), Home: tempDir(t), Env: []string{"GIT_OBJECT_DIRECTORY=/private", "B=paths"}},
			Env: []string{"PATH=/usr/bin:/bin", "B=spec", "C=spec"}}
		out, stderr, err := run(t, s, spec, `echo "$GIT_OBJECT_DIRECTORY $B $C"`)
		require.NoError(t, err, stderr)
		require.Equal(t, "/private paths spec", strings.TrimSpace(out), mode)
	}
}

// The private /tmp is memory: its size is bounded, so a process that
// writes more than TmpBytes there gets "no space", not the worker's RAM.
func TestTmpBounded(t *testing.T) {
	sandboxtest.Require(t)
	t.Parallel()
	s, err := New(Config{TmpBytes: 1 << 20})
	require.NoError(t, err)
	out, stderr, err := run(t, s, Spec{Env: []string{"PATH=/usr/bin:/bin"}},
		`head -c 2097152 /dev/zero > /tmp/fill 2>/dev/null && echo wrote || echo full; rm -f /tmp/fill; head -c 512000 /dev/zero > /tmp/small && echo small`)
	require.NoError(t, err, stderr)
	require.Equal(t, "full\nsmall", strings.TrimSpace(out))

	_, err = New(Config{TmpBytes: -1})
	require.ErrorContains(t, err, "sandbox.tmp_bytes")
}
