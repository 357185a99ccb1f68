package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/droverhq/drover/internal/cli"
)

// Docker and Kubernetes cannot run on the build machines, so these tests are
// the check of docker-compose.yml, deploy/nats and deploy/k8s: they must use
// only flags and variables the binary has, name files that exist, probe the
// endpoints the worker serves, and leave the worker its grace period.

// repoRoot is the repository, seen from the tests package.
const repoRoot = ".."

// defaultGrace is drover serve's --grace default.
const defaultGrace = 30 * time.Second

// cliFlags are the flags of one drover command, from its --help.
type cliFlags struct {
	cmd   string
	takes map[string]bool // flag name -> takes a value
}

var helpFlagLine = regexp.MustCompile(`^\s+(?:-\w, )?--([a-z0-9][a-z0-9-]*)(.*)$`)

// droverFlags reads the flags of `drover <cmd> --help`, global ones included.
func droverFlags(t *testing.T, cmd string) cliFlags {
	t.Helper()
	var out, errb cliBuffer
	code := cli.Execute(context.Background(), []string{cmd, "--help"}, &out, &errb)
	require.Zero(t, code, "drover %s --help: %s", cmd, errb.String())
	f := cliFlags{cmd: cmd, takes: map[string]bool{}}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		m := helpFlagLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		// "--name type   usage" takes a value; "--name   usage" is a switch.
		f.takes[m[1]] = !strings.HasPrefix(m[2], "  ")
	}
	require.NoError(t, sc.Err())
	require.Contains(t, f.takes, "nats-url", "no flags parsed from drover %s --help:\n%s", cmd, out.String())
	return f
}

// parse splits args (after the subcommand) into flag values, failing on a
// flag the command does not have.
func (f cliFlags) parse(t *testing.T, where string, args []string) map[string]string {
	t.Helper()
	vals := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		require.True(t, strings.HasPrefix(a, "--"), "%s: drover %s: unexpected argument %q", where, f.cmd, a)
		name, val, hasVal := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		takes, ok := f.takes[name]
		require.True(t, ok, "%s: drover %s has no flag --%s", where, f.cmd, name)
		if takes && !hasVal {
			require.Less(t, i+1, len(args), "%s: --%s needs a value", where, name)
			i++
			val = args[i]
		}
		vals[name] = val
	}
	return vals
}

// env checks that every DROVER_* variable names a flag of the command, and
// returns the flag values they set.
func (f cliFlags) env(t *testing.T, where string, env map[string]string) map[string]string {
	t.Helper()
	vals := map[string]string{}
	for k, v := range env {
		if !strings.HasPrefix(k, "DROVER_") {
			continue
		}
		name := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(k, "DROVER_")), "_", "-")
		_, ok := f.takes[name]
		require.True(t, ok, "%s: %s names no flag of drover %s (--%s)", where, k, f.cmd, name)
		vals[name] = v
	}
	return vals
}

// setting is a worker setting as drover serve resolves it: flag, then
// DROVER_* variable, then the config file, then def.
func setting(flags, env map[string]string, file, def string, name string) string {
	if v, ok := flags[name]; ok {
		return v
	}
	if v, ok := env[name]; ok {
		return v
	}
	if file != "" {
		return file
	}
	return def
}

// workerFile is the part of drover.yaml these tests read.
type workerFile struct {
	Worker struct {
		Concurrency   int    `yaml:"concurrency"`
		MaxAckPending int    `yaml:"max_ack_pending"`
		Grace         string `yaml:"grace"`
	} `yaml:"worker"`
}

// workerSettings are the settings of one worker deployment that the
// deployment files must agree with.
type workerSettings struct {
	grace         time.Duration
	replicas      int
	concurrency   int
	maxAckPending int
	httpPort      int
	natsURL       string
}

func resolveWorker(t *testing.T, where string, flags, env map[string]string, file workerFile, natsURLEnv string) workerSettings {
	t.Helper()
	var ws workerSettings
	var err error
	ws.grace, err = time.ParseDuration(setting(flags, env, file.Worker.Grace, defaultGrace.String(), "grace"))
	require.NoError(t, err, "%s: grace", where)
	atoi := func(name, fileVal, def string) int {
		if fileVal == "0" {
			fileVal = ""
		}
		n, err := strconv.Atoi(setting(flags, env, fileVal, def, name))
		require.NoError(t, err, "%s: --%s", where, name)
		return n
	}
	ws.replicas = atoi("replicas", "", "1")
	ws.concurrency = atoi("concurrency", strconv.Itoa(file.Worker.Concurrency), "16")
	ws.maxAckPending = atoi("max-ack-pending", strconv.Itoa(file.Worker.MaxAckPending), "1000")
	httpAddr := setting(flags, env, "", "127.0.0.1:8080", "http")
	host, port, err := net.SplitHostPort(httpAddr)
	require.NoError(t, err, "%s: --http %q", where, httpAddr)
	require.NotContains(t, []string{"127.0.0.1", "localhost"}, host, "%s: --http %s is unreachable from outside the container", where, httpAddr)
	ws.httpPort, err = strconv.Atoi(port)
	require.NoError(t, err)
	ws.natsURL = setting(flags, env, "", natsURLEnv, "nats-url")
	require.NotEmpty(t, ws.natsURL, "%s: no NATS URL: the worker would embed a server", where)
	return ws
}

// natsHosts returns the host:port of each URL of a comma-separated list.
func natsHosts(t *testing.T, where, urls string) []string {
	t.Helper()
	var out []string
	for _, s := range strings.Split(urls, ",") {
		u, err := url.Parse(strings.TrimSpace(s))
		require.NoError(t, err, "%s: NATS URL %q", where, s)
		require.Equal(t, "nats", u.Scheme, "%s: NATS URL %q", where, s)
		out = append(out, u.Host)
	}
	return out
}

// requireNoRegistryHost fails on an image reference that names a registry
// host: deployments pull from the registry the operator configures.
func requireNoRegistryHost(t *testing.T, where, image string) {
	t.Helper()
	require.NotEmpty(t, image, where)
	first, _, hasSlash := strings.Cut(image, "/")
	if hasSlash {
		require.False(t, strings.ContainsAny(first, ".:") || first == "localhost",
			"%s: image %q names a registry host", where, image)
	}
}

// --- docker-compose.yml ---

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image           string                       `yaml:"image"`
	Build           any                          `yaml:"build"`
	Ports           []string                     `yaml:"ports"`
	Command         []string                     `yaml:"command"`
	Hostname        string                       `yaml:"hostname"`
	Environment     envMap                       `yaml:"environment"`
	Volumes         []string                     `yaml:"volumes"`
	DependsOn       map[string]map[string]string `yaml:"depends_on"`
	StopGracePeriod string                       `yaml:"stop_grace_period"`
	Healthcheck     struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
}

// envMap is a compose environment, written as a map or as a list of
// NAME=value.
type envMap map[string]string

func (e *envMap) UnmarshalYAML(n *yaml.Node) error {
	*e = envMap{}
	switch n.Kind {
	case yaml.MappingNode:
		var m map[string]string
		if err := n.Decode(&m); err != nil {
			return err
		}
		for k, v := range m {
			(*e)[k] = v
		}
	case yaml.SequenceNode:
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		for _, kv := range l {
			k, v, _ := strings.Cut(kv, "=")
			(*e)[k] = v
		}
	default:
		return fmt.Errorf("line %d: environment is neither a map nor a list", n.Line)
	}
	return nil
}

// natsNode is a NATS service of the compose file with its parsed config.
type natsNode struct {
	service string
	svc     composeService
	opts    *server.Options
}

func TestDeployCompose(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(repoRoot, "docker-compose.yml"))
	require.NoError(t, err)
	var cf composeFile
	require.NoError(t, yaml.Unmarshal(data, &cf))
	serve := droverFlags(t, "serve")
	probe := droverFlags(t, "probe")
	entrypoint := dockerEntrypoint(t)

	var nodes []natsNode
	var workers []string
	for name, svc := range cf.Services {
		switch {
		case strings.HasPrefix(svc.Image, "nats:"):
			nodes = append(nodes, checkComposeNATS(t, name, svc))
		case svc.Build != nil:
			workers = append(workers, name)
		default:
			t.Fatalf("service %s: neither a nats image nor the Drover build", name)
		}
		if svc.Image != "" {
			requireNoRegistryHost(t, "service "+name, svc.Image)
		}
		for _, p := range svc.Ports {
			require.True(t, strings.HasPrefix(p, "127.0.0.1:"), "service %s: port %q is published beyond loopback (want 127.0.0.1:HOST:CONTAINER)", name, p)
		}
		for _, v := range svc.Volumes {
			if src, _, _ := strings.Cut(v, ":"); !strings.HasPrefix(src, ".") {
				require.Contains(t, cf.Volumes, src, "service %s: volume %s is not declared", name, src)
			}
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].service < nodes[j].service })
	sort.Strings(workers)
	require.Len(t, nodes, 3, "a 3-node NATS cluster")
	require.GreaterOrEqual(t, len(workers), 2, "at least two workers")
	checkNATSCluster(t, nodes)

	for _, name := range workers {
		svc := cf.Services[name]
		where := "service " + name
		build, ok := svc.Build.(string)
		require.True(t, ok, "%s: build is a context directory", where)
		require.FileExists(t, filepath.Join(repoRoot, build, "Dockerfile"), where)
		require.NotEmpty(t, svc.Command, where)
		require.Equal(t, "serve", svc.Command[0], "%s runs drover serve", where)
		flags := serve.parse(t, where, svc.Command[1:])
		env := serve.env(t, where, svc.Environment)
		ws := resolveWorker(t, where, flags, env, workerFile{}, svc.Environment["NATS_URL"])

		// Every node, at its client port.
		var want []string
		for _, n := range nodes {
			want = append(want, net.JoinHostPort(n.service, strconv.Itoa(n.opts.Port)))
		}
		require.ElementsMatch(t, want, natsHosts(t, where, ws.natsURL), "%s: NATS_URL lists every node", where)
		require.Equal(t, len(nodes), ws.replicas, "%s: --replicas on a %d-node cluster", where, len(nodes))
		require.LessOrEqual(t, ws.concurrency*len(workers), ws.maxAckPending, "%s: max ack pending covers every worker's pool", where)
		for _, n := range nodes {
			require.Equal(t, "service_healthy", svc.DependsOn[n.service]["condition"], "%s: waits for %s", where, n.service)
		}
		// The worker logs in as the worker profile, its password from the
		// environment the nodes read it from.
		require.Equal(t, "worker", svc.Environment["NATS_USER"], "%s: NATS_USER", where)
		require.True(t, strings.HasPrefix(svc.Environment["NATS_PASSWORD"], "${DROVER_WORKER_PASSWORD:?"), "%s: NATS_PASSWORD from DROVER_WORKER_PASSWORD, required", where)

		stop, err := time.ParseDuration(svc.StopGracePeriod)
		require.NoError(t, err, "%s: stop_grace_period", where)
		require.Greater(t, stop, ws.grace, "%s: stop_grace_period %s must exceed --grace %s", where, stop, ws.grace)

		hc := svc.Healthcheck.Test
		require.GreaterOrEqual(t, len(hc), 4, "%s: health check", where)
		require.Equal(t, []string{"CMD", entrypoint, "probe"}, hc[:3], "%s: health check runs drover probe", where)
		probeArgs := hc[3:]
		var urlArg string
		for i := 0; i < len(probeArgs); i++ {
			if strings.HasPrefix(probeArgs[i], "--") {
				probe.parse(t, where, probeArgs[i:i+2])
				i++
				continue
			}
			urlArg = probeArgs[i]
		}
		u, err := url.Parse(urlArg)
		require.NoError(t, err)
		require.Equal(t, "/readyz", u.Path, "%s: health check", where)
		require.Equal(t, strconv.Itoa(ws.httpPort), u.Port(), "%s: health check port is --http's", where)
	}
}

// checkComposeNATS checks one NATS service and parses the config file it
// mounts with nats-server's own parser.
func checkComposeNATS(t *testing.T, name string, svc composeService) natsNode {
	t.Helper()
	where := "service " + name
	i := slices.Index(svc.Command, "--config")
	require.GreaterOrEqual(t, i, 0, "%s: runs nats-server --config", where)
	require.Less(t, i+1, len(svc.Command), where)
	confPath := svc.Command[i+1]
	var hostFile string
	var dataTargets []string
	for _, v := range svc.Volumes {
		parts := strings.Split(v, ":")
		require.GreaterOrEqual(t, len(parts), 2, "%s: volume %q", where, v)
		if parts[1] == confPath {
			hostFile = parts[0]
		} else {
			dataTargets = append(dataTargets, parts[1])
		}
	}
	require.NotEmpty(t, hostFile, "%s: nothing mounted at %s", where, confPath)
	require.True(t, strings.HasPrefix(path.Clean(hostFile), "deploy/nats/"), "%s: config %s is under deploy/nats", where, hostFile)
	file := filepath.Join(repoRoot, filepath.FromSlash(hostFile))
	require.FileExists(t, file, where)
	// Its include is mounted next to it, as it is next to it here.
	include := "./deploy/nats/profiles.conf:" + path.Join(path.Dir(confPath), "profiles.conf") + ":ro"
	require.Contains(t, svc.Volumes, include, "%s: profiles.conf mounted next to the config", where)
	opts, err := server.ProcessConfigFile(filepath.Join(natsConfWithPasswords(t), filepath.Base(hostFile)))
	require.NoError(t, err, "%s: %s", where, hostFile)
	checkNATSAuth(t, where, svc, opts)

	require.True(t, opts.JetStream, "%s: JetStream enabled", where)
	require.NotEmpty(t, opts.StoreDir, "%s: JetStream store_dir", where)
	require.True(t, slices.ContainsFunc(dataTargets, func(target string) bool {
		return opts.StoreDir == target || strings.HasPrefix(opts.StoreDir, strings.TrimSuffix(target, "/")+"/")
	}), "%s: store_dir %s is on a volume (%v)", where, opts.StoreDir, dataTargets)
	require.True(t, opts.SyncAlways, "%s: sync_interval always, as the embedded server's default", where)
	require.NotZero(t, opts.HTTPPort, "%s: http monitoring port", where)

	hc := strings.Join(svc.Healthcheck.Test, " ")
	require.Contains(t, hc, fmt.Sprintf("127.0.0.1:%d/healthz", opts.HTTPPort), "%s: health check on the monitoring port", where)
	if opts.LameDuckDuration > 0 {
		stop, err := time.ParseDuration(svc.StopGracePeriod)
		require.NoError(t, err, "%s: stop_grace_period", where)
		require.Greater(t, stop, opts.LameDuckDuration, "%s: stop_grace_period exceeds lame_duck_duration", where)
	}
	return natsNode{service: name, svc: svc, opts: opts}
}

// deployPasswords are test values of the passwords deploy/nats/profiles.conf
// reads from the environment.
var deployPasswords = map[string]string{"producer": "producer-deploy-pw", "worker": "worker-deploy-pw", "investigator": "investigator-deploy-pw",
	"console": "console-deploy-pw", "reviewer": "reviewer-deploy-pw"}

// natsConfWithPasswords copies deploy/nats to a temporary directory with
// deployPasswords defined at the top of profiles.conf, so the files parse
// without the variables in the environment (a variable of an including
// file does not reach an included one).
func natsConfWithPasswords(t *testing.T) string {
	t.Helper()
	src := filepath.Join(repoRoot, "deploy", "nats")
	dir := t.TempDir()
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		if e.Name() == "profiles.conf" {
			vars := "# test passwords\n"
			for user, pw := range deployPasswords {
				vars += fmt.Sprintf("DROVER_%s_PASSWORD: %q\n", strings.ToUpper(user), pw)
			}
			b = append([]byte(vars), b...)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), b, 0o600))
	}
	return dir
}

// checkNATSAuth checks that a node lets no one in without a login: the
// three permission profiles, each user's password read from the variable
// the compose service passes through from the environment.
func checkNATSAuth(t *testing.T, where string, svc composeService, opts *server.Options) {
	t.Helper()
	require.Empty(t, opts.NoAuthUser, "%s: no_auth_user would let anyone in", where)
	require.Empty(t, opts.Authorization, "%s: users, not a shared token", where)
	users := map[string]*server.User{}
	for _, u := range opts.Users {
		users[u.Username] = u
	}
	require.Len(t, users, len(deployPasswords), "%s: the producer, worker, investigator, console and reviewer users", where)
	for name, pw := range deployPasswords {
		u := users[name]
		require.NotNil(t, u, "%s: user %s", where, name)
		require.Equal(t, pw, u.Password, "%s: %s's password comes from $DROVER_%s_PASSWORD", where, name, strings.ToUpper(name))
		require.NotNil(t, u.Permissions, "%s: %s has a permission profile", where, name)
		require.NotNil(t, u.Account, "%s: %s is in an account", where, name)
		require.Equal(t, "DROVER", u.Account.Name, "%s: %s's account", where, name)
		v := "DROVER_" + strings.ToUpper(name) + "_PASSWORD"
		require.True(t, strings.HasPrefix(svc.Environment[v], "${"+v+":?"), "%s: %s passed through from the environment, required", where, v)
	}
}

// checkNATSCluster checks that the nodes form one cluster with JetStream:
// same cluster name, unique server names, and routes to every node.
func checkNATSCluster(t *testing.T, nodes []natsNode) {
	t.Helper()
	names := map[string]string{}
	var routesWant []string
	for _, n := range nodes {
		require.NotZero(t, n.opts.Cluster.Port, "%s: cluster listen port", n.service)
		routesWant = append(routesWant, net.JoinHostPort(n.service, strconv.Itoa(n.opts.Cluster.Port)))
	}
	for _, n := range nodes {
		require.Equal(t, nodes[0].opts.Cluster.Name, n.opts.Cluster.Name, "%s: one cluster name", n.service)
		require.NotEmpty(t, n.opts.Cluster.Name, n.service)
		require.NotEmpty(t, n.opts.ServerName, "%s: JetStream needs a server_name", n.service)
		prev, dup := names[n.opts.ServerName]
		require.False(t, dup, "server_name %s on %s and %s", n.opts.ServerName, prev, n.service)
		names[n.opts.ServerName] = n.service
		if n.svc.Hostname != "" {
			require.Equal(t, n.service, n.svc.Hostname, "%s: hostname", n.service)
		}
		var routes []string
		for _, r := range n.opts.Routes {
			routes = append(routes, r.Host)
		}
		// A node may list itself; it must reach the other two.
		for _, want := range routesWant {
			if !strings.HasPrefix(want, n.service+":") {
				require.Contains(t, routes, want, "%s: route to every other node", n.service)
			}
		}
	}
}

// dockerEntrypoint returns the drover binary's path in the image: the
// Dockerfile's ENTRYPOINT.
func dockerEntrypoint(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	require.NoError(t, err)
	var entry []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "ENTRYPOINT "); ok {
			require.NoError(t, json.Unmarshal([]byte(rest), &entry), "Dockerfile ENTRYPOINT in exec form")
		}
		if rest, ok := strings.CutPrefix(line, "FROM "); ok {
			image, _, _ := strings.Cut(rest, " ")
			requireNoRegistryHost(t, "Dockerfile", image)
		}
	}
	require.Len(t, entry, 1, "Dockerfile ENTRYPOINT is the drover binary")
	require.Equal(t, "drover", path.Base(entry[0]))
	return entry[0]
}

// --- deploy/k8s ---

type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	file string
	node yaml.Node
}

type k8sDeployment struct {
	Spec struct {
		Replicas *int         `yaml:"replicas"`
		Selector labelMatcher `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				TerminationGracePeriodSeconds *int           `yaml:"terminationGracePeriodSeconds"`
				Containers                    []k8sContainer `yaml:"containers"`
				Volumes                       []struct {
					Name      string `yaml:"name"`
					ConfigMap *struct {
						Name string `yaml:"name"`
					} `yaml:"configMap"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type labelMatcher struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type k8sContainer struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			ResourceFieldRef *struct {
				Resource string `yaml:"resource"`
			} `yaml:"resourceFieldRef"`
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
	Lifecycle      struct {
		PreStop *struct {
			Sleep *struct {
				Seconds int `yaml:"seconds"`
			} `yaml:"sleep"`
			Exec *struct {
				Command []string `yaml:"command"`
			} `yaml:"exec"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type k8sProbe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

// loadK8s reads every YAML document under deploy/k8s: the manifests (with a
// kind) and the NATS Helm values.
func loadK8s(t *testing.T) (objs []k8sObject, helmValues map[string]any) {
	t.Helper()
	dir := filepath.Join(repoRoot, "deploy", "k8s")
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || (filepath.Ext(p) != ".yaml" && filepath.Ext(p) != ".yml") {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }() // read only
		dec := yaml.NewDecoder(f)
		for {
			var node yaml.Node
			if err := dec.Decode(&node); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			var o k8sObject
			if err := node.Decode(&o); err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			if o.Kind == "" {
				if filepath.Base(rel) == "nats-values.yaml" {
					if err := node.Decode(&helmValues); err != nil {
						return fmt.Errorf("%s: %w", rel, err)
					}
					continue
				}
				return fmt.Errorf("%s: a document without kind", rel)
			}
			o.file, o.node = rel, node
			objs = append(objs, o)
		}
	})
	require.NoError(t, err)
	return objs, helmValues
}

// lookup walks nested maps.
func lookup(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

func TestDeployKubernetes(t *testing.T) {
	t.Parallel()
	objs, helm := loadK8s(t)
	serve := droverFlags(t, "serve")

	// The NATS cluster from the Helm values.
	require.NotNil(t, helm, "deploy/k8s/helm/nats-values.yaml")
	require.Equal(t, true, lookup(helm, "config", "cluster", "enabled"), "Helm: config.cluster.enabled")
	natsReplicas, _ := lookup(helm, "config", "cluster", "replicas").(int)
	require.Equal(t, 3, natsReplicas, "Helm: config.cluster.replicas")
	require.Equal(t, true, lookup(helm, "config", "jetstream", "enabled"), "Helm: config.jetstream.enabled")
	require.Equal(t, true, lookup(helm, "config", "jetstream", "fileStore", "enabled"), "Helm: JetStream file storage")
	require.NotEqual(t, true, lookup(helm, "config", "jetstream", "memoryStore", "enabled"), "Helm: no memory storage")
	checkHelmNATSAuth(t, helm)

	byKind := map[string][]k8sObject{}
	files := map[string]bool{}
	for _, o := range objs {
		require.NotEmpty(t, o.APIVersion, o.file)
		byKind[o.Kind] = append(byKind[o.Kind], o)
		files[o.file] = true
	}
	// kubectl apply -k applies every manifest.
	require.Len(t, byKind["Kustomization"], 1)
	var kust struct {
		Resources []string `yaml:"resources"`
	}
	require.NoError(t, byKind["Kustomization"][0].node.Decode(&kust))
	for _, r := range kust.Resources {
		require.True(t, files[r], "kustomization: %s is not a manifest under deploy/k8s", r)
	}
	for f := range files {
		if f != "kustomization.yaml" {
			require.Contains(t, kust.Resources, f, "kustomization leaves out %s", f)
		}
	}

	configMaps := map[string]map[string]string{}
	for _, o := range byKind["ConfigMap"] {
		var cm struct {
			Data map[string]string `yaml:"data"`
		}
		require.NoError(t, o.node.Decode(&cm), o.file)
		configMaps[o.Metadata.Name] = cm.Data
	}

	require.Len(t, byKind["Deployment"], 1, "one worker Deployment")
	o := byKind["Deployment"][0]
	var dep k8sDeployment
	require.NoError(t, o.node.Decode(&dep), o.file)
	where := o.file
	spec := dep.Spec.Template.Spec
	require.NotNil(t, dep.Spec.Replicas, "%s: replicas", where)
	require.Equal(t, 3, *dep.Spec.Replicas, "%s: replicas", where)
	require.NotEmpty(t, dep.Spec.Selector.MatchLabels, where)
	for k, v := range dep.Spec.Selector.MatchLabels {
		require.Equal(t, v, dep.Spec.Template.Metadata.Labels[k], "%s: the selector matches the pods", where)
	}
	require.Len(t, spec.Containers, 1, where)
	c := spec.Containers[0]
	requireNoRegistryHost(t, where, c.Image)
	require.Empty(t, c.Command, "%s: the image's entrypoint is drover", where)
	require.NotEmpty(t, c.Args, where)
	require.Equal(t, "serve", c.Args[0], "%s runs drover serve", where)
	flags := serve.parse(t, where, c.Args[1:])
	envs := map[string]string{}
	for _, e := range c.Env {
		envs[e.Name] = e.Value
		if e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil {
			kind, res, _ := strings.Cut(e.ValueFrom.ResourceFieldRef.Resource, ".")
			m := map[string]map[string]string{"limits": c.Resources.Limits, "requests": c.Resources.Requests}[kind]
			require.Contains(t, m, res, "%s: %s refers to an unset %s", where, e.Name, e.ValueFrom.ResourceFieldRef.Resource)
		}
	}
	env := serve.env(t, where, envs)
	// The worker profile's login, its password from a Secret.
	require.Equal(t, "worker", envs["NATS_USER"], "%s: NATS_USER", where)
	var fromSecret bool
	for _, e := range c.Env {
		if e.Name == "NATS_PASSWORD" {
			require.Empty(t, e.Value, "%s: NATS_PASSWORD in plain text", where)
			fromSecret = e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name != "" && e.ValueFrom.SecretKeyRef.Key != ""
		}
	}
	require.True(t, fromSecret, "%s: NATS_PASSWORD from a Secret (valueFrom.secretKeyRef)", where)
	require.NotEmpty(t, c.Resources.Requests, "%s: resource requests", where)
	require.NotEmpty(t, c.Resources.Limits["memory"], "%s: a memory limit", where)

	// The config file: mounted from a ConfigMap that drover config check accepts.
	var file workerFile
	if cfgPath := setting(flags, env, "", "", "config"); cfgPath != "" {
		dir, key := path.Split(cfgPath)
		var volume string
		for _, m := range c.VolumeMounts {
			if path.Clean(m.MountPath) == path.Clean(dir) {
				volume = m.Name
			}
		}
		require.NotEmpty(t, volume, "%s: nothing mounted at %s", where, dir)
		var cmName string
		for _, v := range spec.Volumes {
			if v.Name == volume && v.ConfigMap != nil {
				cmName = v.ConfigMap.Name
			}
		}
		require.NotEmpty(t, cmName, "%s: volume %s is not a ConfigMap", where, volume)
		require.Contains(t, configMaps, cmName, "%s: ConfigMap %s", where, cmName)
		content, ok := configMaps[cmName][key]
		require.True(t, ok, "%s: ConfigMap %s has no key %s", where, cmName, key)
		require.NoError(t, yaml.Unmarshal([]byte(content), &file))
		tmp := filepath.Join(t.TempDir(), key)
		require.NoError(t, os.WriteFile(tmp, []byte(content), 0o600))
		var out, errb cliBuffer
		code := cli.Execute(context.Background(), []string{"config", "check", tmp}, &out, &errb)
		require.Zero(t, code, "drover config check on ConfigMap %s: %s%s", cmName, out.String(), errb.String())
	}
	ws := resolveWorker(t, where, flags, env, file, envs["NATS_URL"])

	// NATS: every pod of the Helm release, and replicas to match.
	hosts := natsHosts(t, where, ws.natsURL)
	require.Len(t, hosts, natsReplicas, "%s: NATS_URL lists every NATS pod", where)
	require.Equal(t, natsReplicas, ws.replicas, "%s: DROVER_REPLICAS on a %d-node cluster", where, natsReplicas)
	require.LessOrEqual(t, ws.concurrency**dep.Spec.Replicas, ws.maxAckPending, "%s: max ack pending covers every pod's pool", where)

	// Probes on the --http port.
	portOf := func(p any) int {
		switch v := p.(type) {
		case int:
			return v
		case string:
			for _, cp := range c.Ports {
				if cp.Name == v {
					return cp.ContainerPort
				}
			}
		}
		t.Fatalf("%s: probe port %v is not a container port", where, p)
		return 0
	}
	for _, pr := range []struct {
		name  string
		probe *k8sProbe
		path  string
	}{{"readinessProbe", c.ReadinessProbe, "/readyz"}, {"livenessProbe", c.LivenessProbe, "/livez"}} {
		require.NotNil(t, pr.probe, "%s: %s", where, pr.name)
		require.NotNil(t, pr.probe.HTTPGet, "%s: %s is an HTTP probe", where, pr.name)
		require.Equal(t, pr.path, pr.probe.HTTPGet.Path, "%s: %s", where, pr.name)
		require.Equal(t, ws.httpPort, portOf(pr.probe.HTTPGet.Port), "%s: %s on the --http port", where, pr.name)
	}

	// Stopping: preStop, then SIGTERM and --grace, all within the termination grace.
	pre := c.Lifecycle.PreStop
	require.NotNil(t, pre, "%s: preStop", where)
	var preStop time.Duration
	if pre.Sleep != nil {
		preStop = time.Duration(pre.Sleep.Seconds) * time.Second
	} else {
		require.NotNil(t, pre.Exec, "%s: preStop is a sleep or an exec", where)
	}
	require.NotNil(t, spec.TerminationGracePeriodSeconds, "%s: terminationGracePeriodSeconds", where)
	term := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	require.Greater(t, term, preStop+ws.grace,
		"%s: terminationGracePeriodSeconds %s must exceed preStop %s + --grace %s", where, term, preStop, ws.grace)

	// The disruption budget covers these pods and leaves some running.
	require.Len(t, byKind["PodDisruptionBudget"], 1)
	var pdb struct {
		Spec struct {
			Selector       labelMatcher `yaml:"selector"`
			MaxUnavailable *int         `yaml:"maxUnavailable"`
			MinAvailable   *int         `yaml:"minAvailable"`
		} `yaml:"spec"`
	}
	require.NoError(t, byKind["PodDisruptionBudget"][0].node.Decode(&pdb))
	require.Equal(t, dep.Spec.Selector.MatchLabels, pdb.Spec.Selector.MatchLabels, "the PDB selects the workers")
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		require.Less(t, *pdb.Spec.MaxUnavailable, *dep.Spec.Replicas)
		require.Positive(t, *pdb.Spec.MaxUnavailable, "a PDB that allows no disruption blocks node drains")
	case pdb.Spec.MinAvailable != nil:
		require.Less(t, *pdb.Spec.MinAvailable, *dep.Spec.Replicas, "a PDB that allows no disruption blocks node drains")
	default:
		t.Fatal("PDB: maxUnavailable or minAvailable")
	}
}
