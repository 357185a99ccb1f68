package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The worker pods can run bubblewrap (docs/security.md, "Running the
// sandbox in Kubernetes"): their own user namespace, namespaces and mounts
// allowed by seccomp and AppArmor, an unmasked /proc, and still no
// privilege escalation, no capabilities and no root. The image has
// bubblewrap.
func TestDeploySandbox(t *testing.T) {
	t.Parallel()
	objs, _ := loadK8s(t)
	var dep map[string]any
	for _, o := range objs {
		if o.Kind == "Deployment" {
			require.NoError(t, o.node.Decode(&dep))
		}
	}
	require.NotNil(t, dep, "the worker Deployment")
	pod, _ := lookup(dep, "spec", "template", "spec").(map[string]any)
	require.NotNil(t, pod)
	require.Equal(t, false, pod["hostUsers"], "hostUsers: false (procMount: Unmasked needs it)")
	for _, p := range []string{"seccompProfile", "appArmorProfile"} {
		typ, _ := lookup(pod, "securityContext", p, "type").(string)
		require.Contains(t, []string{"Unconfined", "Localhost"}, typ, "pod securityContext.%s must let bubblewrap make namespaces and mounts", p)
	}
	require.Equal(t, true, lookup(pod, "securityContext", "runAsNonRoot"))
	containers, _ := pod["containers"].([]any)
	require.Len(t, containers, 1)
	c, _ := containers[0].(map[string]any)
	require.Equal(t, "Unmasked", lookup(c, "securityContext", "procMount"))
	require.Equal(t, false, lookup(c, "securityContext", "allowPrivilegeEscalation"))
	require.NotEqual(t, true, lookup(c, "securityContext", "privileged"))
	require.Equal(t, []any{"ALL"}, lookup(c, "securityContext", "capabilities", "drop"))

	docker, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	require.NoError(t, err)
	joined := strings.ReplaceAll(string(docker), "\\\n", " ") // continued lines as one
	require.Regexp(t, `(?m)^RUN .*apt-get install [^\n]*\bbubblewrap\b`, joined, "the image installs bubblewrap")
}
