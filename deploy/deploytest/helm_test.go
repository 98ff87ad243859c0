package deploytest

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/jetjob/jetjob/internal/testtier"
)

// The parts of the rendered objects the checks read.
type object struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`       // ConfigMap
	Spec deploymentSpec    `yaml:"spec"`       // Deployment, Service (selector, ports)
	Str  map[string]string `yaml:"stringData"` // Secret
}

type deploymentSpec struct {
	Replicas *int      `yaml:"replicas"`
	Selector yaml.Node `yaml:"selector"` // Deployment: {matchLabels}, Service: a map
	Ports    []struct {
		Name       string `yaml:"name"`
		Port       int    `yaml:"port"`
		TargetPort string `yaml:"targetPort"`
	} `yaml:"ports"`
	Endpoints           []monitorEndpoint `yaml:"endpoints"`           // ServiceMonitor
	PodMetricsEndpoints []monitorEndpoint `yaml:"podMetricsEndpoints"` // PodMonitor
	Template            struct {
		Metadata struct {
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Spec struct {
			SecurityContext struct {
				RunAsNonRoot *bool `yaml:"runAsNonRoot"`
			} `yaml:"securityContext"`
			Containers []container `yaml:"containers"`
			Volumes    []struct {
				Name   string `yaml:"name"`
				Secret *struct {
					SecretName string `yaml:"secretName"`
					Items      []struct {
						Key  string `yaml:"key"`
						Path string `yaml:"path"`
					} `yaml:"items"`
				} `yaml:"secret"`
			} `yaml:"volumes"`
		} `yaml:"spec"`
	} `yaml:"template"`
}

// monitorEndpoint is a ServiceMonitor's or PodMonitor's scrape target.
type monitorEndpoint struct {
	Port          string `yaml:"port"`
	Path          string `yaml:"path"`
	Authorization *struct {
		Type        string `yaml:"type"`
		Credentials struct{ Name, Key string }
	} `yaml:"authorization"`
}

type container struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Args    []string `yaml:"args"`
	EnvFrom []struct {
		ConfigMapRef struct {
			Name string `yaml:"name"`
		} `yaml:"configMapRef"`
	} `yaml:"envFrom"`
	Env   []envVar `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	LivenessProbe   *probe `yaml:"livenessProbe"`
	ReadinessProbe  *probe `yaml:"readinessProbe"`
	SecurityContext struct {
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type envVar struct {
	Name      string `yaml:"name"`
	Value     string `yaml:"value"`
	ValueFrom *struct {
		SecretKeyRef *struct{ Name, Key string } `yaml:"secretKeyRef"`
		FieldRef     *struct {
			FieldPath string `yaml:"fieldPath"`
		} `yaml:"fieldRef"`
	} `yaml:"valueFrom"`
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

// render runs helm template on the chart with the values files given.
func render(t *testing.T, helm string, values ...string) ([]object, error) {
	t.Helper()
	args := []string{"template", "jetjob", filepath.Join(root, "deploy/helm/jetjob"), "--namespace", "jetjob"}
	for _, v := range values {
		if !filepath.IsAbs(v) {
			v = filepath.Join(root, v)
		}
		args = append(args, "-f", v)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(helm, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm template: %v: %s", err, stderr.String())
	}
	var objs []object
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var o object
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the rendered chart is not YAML: %v\n%s", err, out)
		}
		if o.Kind != "" {
			objs = append(objs, o)
		}
	}
	return objs, nil
}

func find(objs []object, kind, name string) *object {
	for i := range objs {
		if objs[i].Kind == kind && objs[i].Metadata.Name == name {
			return &objs[i]
		}
	}
	return nil
}

// settings are the JETJOB_* variables a binary reads: the string literals
// of that form in the Go source of its main package and of the packages
// whose settings it registers (internal/natsconn).
func settings(t *testing.T, dirs ...string) map[string]bool {
	t.Helper()
	vars := map[string]bool{}
	re := regexp.MustCompile(`^JETJOB_[A-Z0-9_]+$`)
	fset := token.NewFileSet()
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s: %v", dir, err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if v, ok := stringLit(asExpr(n)); ok && re.MatchString(v) {
					vars[v] = true
				}
				return true
			})
		}
	}
	return vars
}

func asExpr(n ast.Node) ast.Expr {
	e, _ := n.(ast.Expr)
	return e
}

// helmBinary is JETJOB_HELM, which make deploy-test sets (it builds helm
// from its Go module); without it the test skips (testtier.Missing).
func helmBinary(t *testing.T) string {
	t.Helper()
	return tool(t, "JETJOB_HELM", "helm")
}

// promtoolBinary is JETJOB_PROMTOOL, as helmBinary.
func promtoolBinary(t *testing.T) string {
	t.Helper()
	return tool(t, "JETJOB_PROMTOOL", "promtool")
}

// tool is the path in the environment variable env, or skips t naming make
// deploy-test (a failure when make runs the tests).
func tool(t *testing.T, env, name string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		testtier.Missing(t, name+" ("+env+" is not set)", nil, "make deploy-test")
	}
	return p
}

// TestHelmChart renders the chart with each example values file and checks
// what an operator relies on: a scheduler Deployment and Service whose
// probes hit /healthz and /readyz on the port the scheduler listens on, a
// worker Deployment per group whose probes hit the worker's metrics port,
// settings the binaries really read, non-root pods with read-only root
// filesystems, and the optional objects only when asked for.
func TestHelmChart(t *testing.T) {
	helm := helmBinary(t)
	schedVars := settings(t, "scheduler/cmd/jetjob-scheduler", "internal/natsconn")
	workerVars := settings(t, "worker/cmd/jetjob-worker", "internal/natsconn")
	for _, c := range []struct {
		values  string
		groups  []string
		monitor bool
		secret  bool // the chart's own Secret (inline values)
		ingress bool
		token   string // the scrape token's Secret
	}{
		{"deploy/helm/examples/minimal.yaml", []string{"shell"}, false, true, false, ""},
		{"deploy/helm/examples/tls-external.yaml", []string{"shell", "ops"}, true, false, true, "jetjob-metrics"},
	} {
		t.Run(filepath.Base(c.values), func(t *testing.T) {
			objs, err := render(t, helm, c.values)
			if err != nil {
				t.Fatal(err)
			}
			sched := find(objs, "Deployment", "jetjob-scheduler")
			if sched == nil {
				t.Fatalf("no Deployment jetjob-scheduler among %d objects", len(objs))
			}
			cm := find(objs, "ConfigMap", "jetjob-scheduler")
			if cm == nil {
				t.Fatal("no ConfigMap jetjob-scheduler")
			}
			sc := checkPod(t, objs, sched, "scheduler", "http", cm, "JETJOB_LISTEN", schedVars)
			if !slices.Equal(sc.Args, []string{"serve"}) {
				t.Errorf("scheduler args %q, want [serve]", sc.Args)
			}
			for _, v := range []string{"JETJOB_DATABASE_URL", "JETJOB_SCHEDULER_ID"} {
				if !hasEnv(sc, v) {
					t.Errorf("scheduler: no %s", v)
				}
			}
			if hasEnv(sc, "JETJOB_METRICS_TOKEN_FILE") != (c.token != "") {
				t.Errorf("scheduler: JETJOB_METRICS_TOKEN_FILE set: %v, want %v", hasEnv(sc, "JETJOB_METRICS_TOKEN_FILE"), c.token != "")
			}

			svc := find(objs, "Service", "jetjob-scheduler")
			if svc == nil {
				t.Fatal("no Service jetjob-scheduler")
			}
			var sel map[string]string
			if err := svc.Spec.Selector.Decode(&sel); err != nil || len(sel) == 0 {
				t.Fatalf("Service selector: %v %v", sel, err)
			}
			for k, v := range sel {
				if sched.Spec.Template.Metadata.Labels[k] != v {
					t.Errorf("the Service selects %s=%s, which the scheduler pods lack", k, v)
				}
			}
			if len(svc.Spec.Ports) != 2 || svc.Spec.Ports[0].TargetPort != "http" || svc.Spec.Ports[1].TargetPort != "metrics" {
				t.Errorf("Service ports %+v: want two, to the scheduler's http and metrics ports", svc.Spec.Ports)
			}
			// Metrics have a listener of their own (the API's port,
			// which the Ingress publishes, serves none without a
			// token): the container port the Service and the monitors
			// name is the one the scheduler listens on.
			metricsPort := 0
			for _, p := range sc.Ports {
				if p.Name == "metrics" {
					metricsPort = p.ContainerPort
				}
			}
			if want := fmt.Sprintf(":%d", metricsPort); metricsPort == 0 || cm.Data["JETJOB_METRICS_LISTEN"] != want {
				t.Errorf("scheduler: JETJOB_METRICS_LISTEN %q, container port metrics %d: want them to agree", cm.Data["JETJOB_METRICS_LISTEN"], metricsPort)
			}

			for _, g := range c.groups {
				name := "jetjob-worker-" + g
				w, wcm := find(objs, "Deployment", name), find(objs, "ConfigMap", name)
				if w == nil {
					w = find(objs, "StatefulSet", name)
				}
				if w == nil || wcm == nil {
					t.Errorf("no Deployment (or StatefulSet) and ConfigMap %s for group %s", name, g)
					continue
				}
				if wcm.Data["JETJOB_GROUP"] != g {
					t.Errorf("%s: JETJOB_GROUP %q, want %q", name, wcm.Data["JETJOB_GROUP"], g)
				}
				if wcm.Data["JETJOB_HANDLERS"] == "" {
					t.Errorf("%s: no JETJOB_HANDLERS (the worker refuses to start without one)", name)
				}
				wc := checkPod(t, objs, w, "worker", "metrics", wcm, "JETJOB_METRICS_LISTEN", workerVars)
				if !hasEnv(wc, "JETJOB_WORKER_ID") {
					t.Errorf("%s: no JETJOB_WORKER_ID", name)
				}
				if hasEnv(wc, "JETJOB_METRICS_TOKEN_FILE") != (c.token != "") {
					t.Errorf("%s: JETJOB_METRICS_TOKEN_FILE set: %v, want %v", name, hasEnv(wc, "JETJOB_METRICS_TOKEN_FILE"), c.token != "")
				}
			}
			if n := count(objs, "Deployment") + count(objs, "StatefulSet"); n != 1+len(c.groups) {
				t.Errorf("%d Deployments and StatefulSets, want the scheduler's and %d worker groups'", n, len(c.groups))
			}
			if got := count(objs, "ServiceMonitor") == 1 && count(objs, "PodMonitor") == 1; got != c.monitor {
				t.Errorf("ServiceMonitor and PodMonitor rendered: %v, want %v", got, c.monitor)
			}
			if c.monitor {
				// They select the scheduler Service and every worker pod.
				var sm, pm struct {
					MatchLabels map[string]string `yaml:"matchLabels"`
				}
				if err := find(objs, "ServiceMonitor", "jetjob-scheduler").Spec.Selector.Decode(&sm); err != nil {
					t.Fatal(err)
				}
				if err := find(objs, "PodMonitor", "jetjob-worker").Spec.Selector.Decode(&pm); err != nil {
					t.Fatal(err)
				}
				// Both scrape the metrics ports, with the token when
				// there is one.
				for kind, eps := range map[string][]monitorEndpoint{
					"ServiceMonitor": find(objs, "ServiceMonitor", "jetjob-scheduler").Spec.Endpoints,
					"PodMonitor":     find(objs, "PodMonitor", "jetjob-worker").Spec.PodMetricsEndpoints,
				} {
					if len(eps) != 1 || eps[0].Port != "metrics" || eps[0].Path != "/metrics" {
						t.Errorf("%s endpoints %+v: want /metrics on port metrics", kind, eps)
						continue
					}
					a := eps[0].Authorization
					if got := a != nil && a.Type == "Bearer" && a.Credentials.Name == c.token && a.Credentials.Key != ""; got != (c.token != "") {
						t.Errorf("%s authorization %+v: want the bearer token of Secret %q", kind, a, c.token)
					}
				}
				if len(sm.MatchLabels) == 0 || !subset(sm.MatchLabels, svc.Metadata.Labels) {
					t.Errorf("the ServiceMonitor selects %v, not the Service (labels %v)", sm.MatchLabels, svc.Metadata.Labels)
				}
				for _, g := range c.groups {
					w := find(objs, "Deployment", "jetjob-worker-"+g)
					if w == nil {
						w = find(objs, "StatefulSet", "jetjob-worker-"+g)
					}
					if w != nil && (len(pm.MatchLabels) == 0 || !subset(pm.MatchLabels, w.Spec.Template.Metadata.Labels)) {
						t.Errorf("the PodMonitor selects %v, not group %s's pods", pm.MatchLabels, g)
					}
				}
			}
			if got := find(objs, "Secret", "jetjob") != nil; got != c.secret {
				t.Errorf("the chart's Secret rendered: %v, want %v (only for inline values)", got, c.secret)
			}
			if got := count(objs, "Ingress") == 1; got != c.ingress {
				t.Errorf("Ingress rendered: %v, want %v", got, c.ingress)
			}
		})
	}
}

// checkPod checks a Deployment's one container: probes on the named port,
// which is the port its ConfigMap's listen setting names; every JETJOB_*
// variable (ConfigMap and env) one the binary reads; security; mounts.
func checkPod(t *testing.T, objs []object, d *object, cname, port string, cm *object, listenVar string, vars map[string]bool) container {
	t.Helper()
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 || pod.Containers[0].Name != cname {
		t.Fatalf("%s: want one container %q, have %+v", d.Metadata.Name, cname, pod.Containers)
	}
	c := pod.Containers[0]
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].ConfigMapRef.Name != cm.Metadata.Name {
		t.Errorf("%s: envFrom %+v, want the ConfigMap %s", d.Metadata.Name, c.EnvFrom, cm.Metadata.Name)
	}
	var containerPort int
	for _, p := range c.Ports {
		if p.Name == port {
			containerPort = p.ContainerPort
		}
	}
	if containerPort == 0 {
		t.Errorf("%s: no container port named %s", d.Metadata.Name, port)
	}
	if want := fmt.Sprintf(":%d", containerPort); cm.Data[listenVar] != want {
		t.Errorf("%s: %s is %q but the probes' port %s is %d", d.Metadata.Name, listenVar, cm.Data[listenVar], port, containerPort)
	}
	for what, p := range map[string]struct {
		probe *probe
		path  string
	}{"liveness": {c.LivenessProbe, "/healthz"}, "readiness": {c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port != port {
			t.Errorf("%s: %s probe %+v, want GET %s on port %s", d.Metadata.Name, what, p.probe, p.path, port)
		}
	}
	var names []string
	for k := range cm.Data {
		names = append(names, k)
	}
	for _, e := range c.Env {
		names = append(names, e.Name)
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			if ref := e.ValueFrom.SecretKeyRef; ref.Name == "" || ref.Key == "" {
				t.Errorf("%s: %s from a Secret without a name or key", d.Metadata.Name, e.Name)
			}
		}
	}
	for _, n := range names {
		if !vars[n] {
			t.Errorf("%s: %s is not a setting jetjob-%s reads", d.Metadata.Name, n, cname)
		}
	}
	if r := pod.SecurityContext.RunAsNonRoot; r == nil || !*r {
		t.Errorf("%s: the pod may run as root", d.Metadata.Name)
	}
	if r := c.SecurityContext.ReadOnlyRootFilesystem; r == nil || !*r {
		t.Errorf("%s: the root filesystem is writable", d.Metadata.Name)
	}
	if a := c.SecurityContext.AllowPrivilegeEscalation; a == nil || *a {
		t.Errorf("%s: privilege escalation allowed", d.Metadata.Name)
	}
	vols := map[string]bool{}
	for _, v := range pod.Volumes {
		vols[v.Name] = true
	}
	for _, m := range c.VolumeMounts {
		if !vols[m.Name] {
			t.Errorf("%s: mount %s of a volume the pod lacks", d.Metadata.Name, m.Name)
		}
	}
	// Files the settings name are mounted.
	for _, e := range c.Env {
		if !strings.HasPrefix(e.Value, "/etc/jetjob/") {
			continue
		}
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || strings.HasPrefix(e.Value, m.MountPath+"/")
		}
		if !mounted {
			t.Errorf("%s: %s=%s is on no mounted volume", d.Metadata.Name, e.Name, e.Value)
		}
	}
	return c
}

func hasEnv(c container, name string) bool {
	return slices.ContainsFunc(c.Env, func(e envVar) bool { return e.Name == name })
}

func subset(sub, of map[string]string) bool {
	for k, v := range sub {
		if of[k] != v {
			return false
		}
	}
	return true
}

func count(objs []object, kind string) int {
	n := 0
	for _, o := range objs {
		if o.Kind == kind {
			n++
		}
	}
	return n
}

// TestHelmChartRefusesBadValues: an install that cannot work fails at
// helm install time with a message naming the value, not as a crash loop,
// and a misspelt value (values.schema.json) is refused, not ignored.
func TestHelmChartRefusesBadValues(t *testing.T) {
	helm := helmBinary(t)
	dir := t.TempDir()
	// Every case but the one about it has a trigger signing key.
	const keys = "triggerSigning: {existingSecret: k}\n"
	for _, c := range []struct{ name, values, want string }{
		{"no trigger signing key", "postgres: {url: postgres://x}\n", "triggerSigning.existingSecret: the Secret with the trigger signing key pair"},
		{"a public key that is none", "postgres: {url: postgres://x}\ntriggerSigning: {existingSecret: k, extraPublicKeys: [CHANGE-ME]}\n", "extraPublicKeys"},
		{"no database", "nats: {url: nats://nats:4222}\n", "postgres.url or postgres.existingSecret"},
		{"two NATS auth methods", "postgres: {url: postgres://x}\nnats: {auth: {user: u, tokenSecret: s}}\n", "set one of"},
		{"http without hosts", "postgres: {url: postgres://x}\nworkers: [{group: ops, handlers: [http]}]\n", "httpAllowHosts"},
		{"bad group name", "postgres: {url: postgres://x}\nworkers: [{group: 'a.b'}]\n", "/workers/0/group"},
		{"bad worker kind", "postgres: {url: postgres://x}\nworkers: [{group: a, kind: DaemonSet}]\n", "'Deployment', 'StatefulSet'"},
		// values.schema.json: a misspelt or misplaced value is refused, not ignored.
		{"a misspelt value", "postgres: {url: postgres://x}\nworkers: [{group: a, concurency: 4}]\n", "'concurency' not allowed"},
		{"a setting outside config", "postgres: {url: postgres://x}\nscheduler: {config: {LEASE_TTL: 10s}}\n", "LEASE_TTL"},
		{"two stream replicas", "postgres: {url: postgres://x}\nnats: {streamReplicas: 2}\n", "streamReplicas"},
		{"two entries of one name", "postgres: {url: postgres://x}\nworkers: [{group: a}, {group: A}]\n", "two worker entries"},
		{"TLS without its Secret", "postgres: {url: postgres://x}\nnats: {tls: {enabled: true}}\n", "nats.tls.existingSecret"},
	} {
		f := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".yaml")
		values := c.values
		if !strings.Contains(values, "triggerSigning") && c.name != "no trigger signing key" {
			values = keys + values
		}
		if err := os.WriteFile(f, []byte(values), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := renderAbs(helm, f)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: helm template error %v, want one naming %q", c.name, err, c.want)
		}
	}
}

func renderAbs(helm, values string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(helm, "template", "jetjob", filepath.Join(root, "deploy/helm/jetjob"), "-f", values)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, stderr.String())
	}
	return out, nil
}

// TestHelmNotes renders NOTES.txt (helm template skips it: a copy of the
// chart makes it an ordinary template) and checks that it tells how to
// reach the console and create the first admin, with the real names.
func TestHelmNotes(t *testing.T) {
	helm := helmBinary(t)
	chart := filepath.Join(t.TempDir(), "jetjob")
	src := filepath.Join(root, "deploy/helm/jetjob")
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		dst := filepath.Join(chart, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if rel == filepath.Join("templates", "NOTES.txt") {
			b = append(append([]byte(`{{- define "notes-under-test" -}}`), b...), "{{- end -}}"...)
			dst = filepath.Join(chart, "templates", "_notes.tpl")
			if err := os.WriteFile(filepath.Join(chart, "templates", "notes.yaml"), []byte(`notes: {{ include "notes-under-test" . | toJson }}`), 0o644); err != nil {
				return err
			}
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		values string
		want   []string
	}{
		{"deploy/helm/examples/minimal.yaml", []string{
			"kubectl -n jetjob port-forward svc/jetjob-scheduler 8080:8080",
			"console: http://localhost:8080/",
			"exec -i deploy/jetjob-scheduler -c scheduler -- \\\n     jetjob-scheduler users create-admin admin",
			"jetjob login --api http://localhost:8080 --user admin",
			"   - shell\n",
			"WARNING: no scrape token",
		}},
		{"deploy/helm/examples/tls-external.yaml", []string{
			"console: https://jetjob.example.com/",
			"jetjob login --api https://jetjob.example.com --user admin",
			"JETJOB_API_TOKEN is set",
			"   - ops\n",
			"A ServiceMonitor",
			"Scrapes need the token in Secret jetjob-metrics",
		}},
	} {
		cmd := exec.Command(helm, "template", "jetjob", chart, "--namespace", "jetjob", "-f", filepath.Join(root, c.values), "--show-only", "templates/notes.yaml")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.values, err, out)
		}
		var doc struct{ Notes string }
		if err := yaml.Unmarshal(out, &doc); err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(doc.Notes, w) {
				t.Errorf("%s: the notes lack %q:\n%s", c.values, w, doc.Notes)
			}
		}
	}
}
