package subjects_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// branchCorpus is the table of names: want is ValidBranch's answer, stricter
// marks the names ValidBranch refuses although git accepts them.
var branchCorpus = []struct {
	name     string
	want     bool
	stricter bool
}{
	{"main", true, false},
	{"drover/wf-1/T1.3", true, false},
	{"task/T1.3", true, false},
	{"feature/é-ü", true, false},
	{"a/@", true, false},
	{"a@b", true, false},
	{"a{b}", true, false},
	{"refs/heads/x", true, false},
	{"x.lock.y", true, false},
	{"a-", true, false},
	{"a.b/c_d", true, false},
	{"a#b", true, false},
	{"a!b", true, false},
	{"", false, false},
	{"-x", false, false},
	{"HEAD", false, false},
	{"@", false, true},
	{"a@{b", false, false},
	{"@{-1}", false, false},
	{"x.lock", false, false},
	{"a.lock/b", false, false},
	{"a/.b", false, false},
	{".a", false, false},
	{"a..b", false, false},
	{"a/", false, false},
	{"/a", false, false},
	{"a//b", false, false},
	{"a.", false, false},
	{"a/b.", false, false},
	{"a b", false, false},
	{"a\tb", false, false},
	{"a\x7fb", false, false},
	{"a\x01b", false, false},
	{"a~b", false, false},
	{"a^b", false, false},
	{"a:b", false, false},
	{"a?b", false, false},
	{"a*b", false, false},
	{"a[b", false, false},
	{"a\\b", false, false},
	{"a\xffb", false, true},
	{strings.Repeat("a", subjects.MaxBranchBytes), true, false},
	{strings.Repeat("a", subjects.MaxBranchBytes+1), false, true},
}

func TestValidBranch(t *testing.T) {
	t.Parallel()
	for _, tc := range branchCorpus {
		err := subjects.ValidBranch(tc.name)
		if tc.want {
			assert.NoError(t, err, "%q", tc.name)
		} else {
			assert.ErrorIs(t, err, subjects.ErrInvalidBranch, "%q", tc.name)
		}
	}
}

// TestValidBranchMatchesGit runs the real `git check-ref-format --branch` on
// the corpus: ValidBranch agrees with it except where it is stricter on purpose.
func TestValidBranchMatchesGit(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs git: not run with -short")
	}
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	for _, tc := range branchCorpus {
		if tc.name == "" || strings.ContainsRune(tc.name, 0) {
			continue // git cannot take these as an argument
		}
		cmd := exec.Command(gitBin, "check-ref-format", "--branch", tc.name)
		cmd.Dir = dir
		cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "HOME=" + dir, "GIT_CEILING_DIRECTORIES=" + dir}
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			require.NoError(t, err)
		}
		gitOK := err == nil
		if tc.stricter {
			assert.True(t, gitOK, "%q: git refuses it, it is not stricter", tc.name)
			continue
		}
		assert.Equal(t, tc.want, gitOK, "%q: git says valid=%v", tc.name, gitOK)
	}
}
