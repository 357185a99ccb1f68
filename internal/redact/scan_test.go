package redact

import (
	"encoding/base64"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// gitPatch makes a repository with base's files, commits change's on top
// and returns `git diff --binary --full-index` between the two, as the
// workspace records it.
func gitPatch(t *testing.T, base, change map[string]string) []byte {
	t.Helper()
	if testing.Short() {
		t.Skip("runs git: not run with -short")
	}
	dir := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir,
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.Output()
		require.NoError(t, err, "git %v", args)
		return string(out)
	}
	write := func(files map[string]string) {
		for name, body := range files {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
		}
		run("add", "-A")
		run("commit", "-q", "--allow-empty", "-m", "c")
	}
	run("init", "-q")
	write(base)
	write(change)
	return []byte(run("diff", "--binary", "--full-index", "--no-renames", "HEAD~1", "HEAD", "--"))
}

func TestScanPatch(t *testing.T) {
	t.Parallel()
	const secret = "sk-proj-S3cr3tValue-0123456789"
	r := NewNamed(Secret{Name: "OPENAI_API_KEY", Value: secret}, Secret{Name: "GH_TOKEN", Value: "ghp_other_token_value"})
	b64 := base64.StdEncoding.EncodeToString([]byte("prefix:" + secret + ":suffix"))
	var wrapped strings.Builder
	for i := 0; i < len(b64); i += 20 {
		wrapped.WriteString(b64[i:min(i+20, len(b64))] + "\n")
	}
	binary := append(append([]byte{0, 1, 2, 0xff}, secret...), 0, 0)
	base := map[string]string{"README": "hello\n", "old.txt": "token " + secret + "\n", "lib.go": "package lib\n"}
	for _, tc := range []struct {
		name   string
		change map[string]string
		want   *PatchFinding
	}{
		{"clean", map[string]string{"lib.go": "package lib\n\nfunc F() {}\n"}, nil},
		{"plain in a new file", map[string]string{"cfg/.env": "KEY=" + secret + "\n"},
			&PatchFinding{Found{"OPENAI_API_KEY", "plain"}, "cfg/.env"}},
		{"base64 in a stream", map[string]string{"lib.go": "package lib\n// " + b64 + "\n"},
			&PatchFinding{Found{"OPENAI_API_KEY", "base64"}, "lib.go"}},
		{"base64 wrapped over lines", map[string]string{"dump.txt": wrapped.String()},
			&PatchFinding{Found{"OPENAI_API_KEY", "base64"}, "dump.txt"}},
		{"hex", map[string]string{"x.txt": hex.EncodeToString([]byte(secret)) + "\n"},
			&PatchFinding{Found{"OPENAI_API_KEY", "hex"}, "x.txt"}},
		{"binary file", map[string]string{"blob.bin": string(binary)},
			&PatchFinding{Found{"OPENAI_API_KEY", "plain"}, "blob.bin"}},
		{"second secret", map[string]string{"a.txt": "ghp_other_token_value\n"},
			&PatchFinding{Found{"GH_TOKEN", "plain"}, "a.txt"}},
		{"in a file name, masked in the report", map[string]string{"k-" + secret: "x\n"},
			&PatchFinding{Found{"OPENAI_API_KEY", "plain"}, "k-" + Mask}},
		{"removed or kept lines are the base's", map[string]string{"old.txt": "token " + secret + "\nmore\n", "README": "bye\n"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			patch := gitPatch(t, base, tc.change)
			got, ok := r.ScanPatch(patch)
			if tc.want == nil {
				require.False(t, ok, "%+v in\n%s", got, patch)
				return
			}
			require.True(t, ok, "%s", patch)
			require.Equal(t, *tc.want, got)
			require.NotContains(t, got.File, secret)
		})
	}
}

// A binary file modified in place is a delta hunk: its inserted bytes
// are read too.
func TestScanPatchBinaryDelta(t *testing.T) {
	t.Parallel()
	const secret = "tok-binary-delta-987654"
	r := New(secret)
	blob := make([]byte, 8<<10)
	for i := range blob {
		blob[i] = byte(i * 7)
	}
	changed := append([]byte{}, blob...)
	copy(changed[4000:], secret)
	patch := gitPatch(t, map[string]string{"b.bin": string(blob)}, map[string]string{"b.bin": string(changed)})
	got, ok := r.ScanPatch(patch)
	require.True(t, ok, "%s", patch)
	require.Equal(t, "b.bin", got.File)
	require.Equal(t, "secret #1", got.Name)
}

// A secret shorter than MinScanLen is masked in text but does not fail a
// change: "drover" as a development password must not refuse every patch
// that names the project.
func TestScanPatchSkipsShortSecrets(t *testing.T) {
	t.Parallel()
	r := NewNamed(Secret{Name: "DROVER_PASSWORD", Value: "drover"}, Secret{Name: "TOKEN", Value: "long-enough-token"})
	require.Equal(t, "a "+Mask+" b", r.String("a drover b"))
	patch := gitPatch(t, map[string]string{"a": "x\n"}, map[string]string{"a": "x\ndrover\n"})
	_, ok := r.ScanPatch(patch)
	require.False(t, ok)
	patch = gitPatch(t, map[string]string{"a": "x\n"}, map[string]string{"a": "x\nlong-enough-token\n"})
	f, ok := r.ScanPatch(patch)
	require.True(t, ok)
	require.Equal(t, "TOKEN", f.Name)
}

// FuzzScanPatch: any input is scanned without a panic, and a secret on an
// added line of a file's hunk is found whatever surrounds it.
func FuzzScanPatch(f *testing.F) {
	f.Add([]byte("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n+hello\n"), "")
	f.Add([]byte("diff --git a/b b/b\nGIT binary patch\nliteral 5\nMcmZ?b\n\nliteral 0\nHcmV?d00001\n\n"), "pre")
	f.Add([]byte("GIT binary patch\ndelta 99999999\nzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz\n"), "x")
	const secret = "fuzz-secret-0123456789"
	r := New(secret)
	f.Fuzz(func(t *testing.T, patch []byte, around string) {
		_, _ = r.ScanPatch(patch)
		if strings.ContainsAny(around, "\r\n") {
			return
		}
		added := append(append([]byte{}, patch...), "\ndiff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+"+around+secret+around+"\n"...)
		if _, ok := r.ScanPatch(added); !ok {
			t.Fatalf("not found in %q", added)
		}
	})
}

func BenchmarkScanPatch(b *testing.B) {
	r := New("sk-proj-0123456789abcdef", "ghp_0123456789abcdefghij", "hunter2hunter2", "nats-password-0")
	var p strings.Builder
	for i := 0; p.Len() < 1<<20; i++ {
		p.WriteString("diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,40 @@\n")
		for range 40 {
			p.WriteString("+func main() { fmt.Println(\"an ordinary line of a patch\") }\n")
		}
	}
	patch := []byte(p.String())
	b.SetBytes(int64(len(patch)))
	for b.Loop() {
		if _, ok := r.ScanPatch(patch); ok {
			b.Fatal("found")
		}
	}
}
