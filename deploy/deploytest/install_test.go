package deploytest

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/localpg"
	"github.com/jetjob/jetjob/internal/natsembed"
	"github.com/jetjob/jetjob/internal/testtier"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/shared/trigsign"
)

// TestHelmMinimalInstallRuns starts the real binaries with exactly the
// environment the chart gives their containers (minimal.yaml pointed at a
// throwaway PostgreSQL and NATS: ConfigMap, values, the chart's Secret,
// the pod name), nothing inherited, and asks each the way the kubelet
// would: liveness on the probe's path and port answers 200 at once, and
// readiness turns 200 once the scheduler has migrated the database and
// the worker has its consumer. A setting the binaries refuse, a port the
// probes do not find, or readiness that never comes, fails here rather
// than as a crash loop in a cluster. Then NATS stops: readiness turns 503
// and liveness stays 200.
func TestHelmMinimalInstallRuns(t *testing.T) {
	testtier.Needs(t, testtier.PostgreSQL+" and "+testtier.NATS)
	helm := helmBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	pg, err := localpg.Start(ctx, localpg.Options{Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	if err := pg.CreateDatabase(ctx, "jetjob", ""); err != nil {
		t.Fatal(err)
	}
	ns, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)

	dir := t.TempDir()
	schedPort, schedMetricsPort, workerPort := freePort(t), freePort(t), freePort(t)
	override := filepath.Join(dir, "here.yaml")
	err = os.WriteFile(override, []byte(fmt.Sprintf(
		"postgres: {url: %q}\nnats: {url: %q}\nscheduler: {port: %d, metricsPort: %d}\nworkerDefaults: {metricsPort: %d}\n",
		pg.URL("jetjob"), ns.ClientURL(), schedPort, schedMetricsPort, workerPort)), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := render(t, helm, "deploy/helm/examples/minimal.yaml", override)
	if err != nil {
		t.Fatal(err)
	}

	build := exec.Command("go", "build", "-o", dir, "./scheduler/cmd/jetjob-scheduler", "./worker/cmd/jetjob-worker")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	secret := find(objs, "Secret", "jetjob")
	if secret == nil {
		t.Fatal("minimal.yaml renders no Secret for the inline database URL")
	}
	// The Secrets minimal.yaml names and the operator creates, as the
	// kubelet mounts them: the trigger signing key pair.
	mounted := mountSecrets(t, dir, map[string]map[string][]byte{"jetjob-trigger-key": triggerKeyPair(t)})
	type proc struct {
		name        string
		live, ready string // URLs of the probes
		exited      <-chan error
	}
	var procs []proc
	for _, p := range []struct{ deploy, binary, pod string }{
		{"jetjob-scheduler", "jetjob-scheduler", "jetjob-scheduler-7d9f8-x2k4q"},
		{"jetjob-worker-shell", "jetjob-worker", "jetjob-worker-shell-5c6b7-p9z2m"},
	} {
		d := find(objs, "Deployment", p.deploy)
		if d == nil || len(d.Spec.Template.Spec.Containers) != 1 {
			t.Fatalf("no Deployment %s with one container", p.deploy)
		}
		c := d.Spec.Template.Spec.Containers[0]
		env := []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}
		for _, ref := range c.EnvFrom {
			cm := find(objs, "ConfigMap", ref.ConfigMapRef.Name)
			if cm == nil {
				t.Fatalf("envFrom names ConfigMap %s, which the chart does not render", ref.ConfigMapRef.Name)
			}
			for k, v := range cm.Data {
				env = append(env, k+"="+v)
			}
		}
		files := mounted(d)
		for _, e := range c.Env {
			v := e.Value
			for from, to := range files {
				if strings.HasPrefix(v, from+"/") {
					v = to + strings.TrimPrefix(v, from)
				}
			}
			switch {
			case e.ValueFrom == nil:
			case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
				v = p.pod
			case e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == secret.Metadata.Name:
				var ok bool
				if v, ok = secret.Str[e.ValueFrom.SecretKeyRef.Key]; !ok {
					t.Fatalf("%s: key %s is not in the chart's Secret", e.Name, e.ValueFrom.SecretKeyRef.Key)
				}
			default:
				t.Fatalf("%s: a source this test does not know: %+v", e.Name, e.ValueFrom)
			}
			env = append(env, e.Name+"="+v)
		}
		port := 0
		for _, cp := range c.Ports {
			if cp.Name == c.LivenessProbe.HTTPGet.Port {
				port = cp.ContainerPort
			}
		}
		cmd := exec.Command(filepath.Join(dir, p.binary), c.Args...)
		cmd.Env = env
		logFile, err := os.Create(filepath.Join(dir, p.binary+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
			if t.Failed() {
				b, _ := os.ReadFile(logFile.Name())
				t.Logf("%s's output:\n%s", p.binary, b)
			}
		})
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		procs = append(procs, proc{p.binary, base + c.LivenessProbe.HTTPGet.Path, base + c.ReadinessProbe.HTTPGet.Path, exited})
	}

	for _, p := range procs {
		if code, err := waitFor(ctx, p.exited, p.live, 200, 15*time.Second); err != nil {
			t.Fatalf("%s liveness %s: %v (last status %d)", p.name, p.live, err, code)
		}
		if code, err := waitFor(ctx, p.exited, p.ready, 200, 60*time.Second); err != nil {
			t.Fatalf("%s readiness %s: %v (last status %d)", p.name, p.ready, err, code)
		}
	}

	// The scrape targets the chart names (the scheduler's metrics port,
	// the worker's) serve the metrics; the API's port, which an Ingress
	// publishes, does not (no scrape token in minimal.yaml).
	for _, c := range []struct {
		url  string
		want int
	}{
		{fmt.Sprintf("http://127.0.0.1:%d/metrics", schedMetricsPort), 200},
		{fmt.Sprintf("http://127.0.0.1:%d/metrics", workerPort), 200},
		{fmt.Sprintf("http://127.0.0.1:%d/metrics", schedPort), 404},
	} {
		if code, err := waitFor(ctx, nil, c.url, c.want, 5*time.Second); err != nil {
			t.Errorf("GET %s: %v (last status %d)", c.url, err, code)
		}
	}

	// NATS goes away: both leave the Service (readiness 503) but stay
	// alive (liveness 200), so Kubernetes does not restart every pod
	// during an outage.
	ns.Shutdown()
	for _, p := range procs {
		if code, err := waitFor(ctx, p.exited, p.ready, 503, 30*time.Second); err != nil {
			t.Errorf("%s readiness %s with NATS down: %v (last status %d)", p.name, p.ready, err, code)
		}
		if code, err := waitFor(ctx, p.exited, p.live, 200, 5*time.Second); err != nil {
			t.Errorf("%s liveness %s with NATS down: %v (last status %d)", p.name, p.live, err, code)
		}
	}
}

// waitFor polls url until it answers want, the process exits or timeout.
func waitFor(ctx context.Context, exited <-chan error, url string, want int, timeout time.Duration) (int, error) {
	client := &http.Client{Timeout: 2 * time.Second}
	last := 0
	var exitErr error
	gone := false
	testwait.Poll(timeout, func() bool {
		select {
		case exitErr = <-exited:
			gone = true
			return true
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			last = resp.StatusCode
		}
		return last == want || ctx.Err() != nil
	})
	switch {
	case gone:
		return last, fmt.Errorf("the process exited: %v", exitErr)
	case last == want:
		return last, nil
	default:
		return last, fmt.Errorf("no %d within %v", want, timeout)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// triggerKeyPair is the content of a trigger signing key Secret as the
// chart's values describe it: trigger.key and trigger.pub.
func triggerKeyPair(t *testing.T) map[string][]byte {
	t.Helper()
	priv, err := trigsign.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	pemKey, err := trigsign.EncodePrivateKeyPEM(priv)
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{"trigger.key": pemKey,
		"trigger.pub": []byte(trigsign.EncodePublicKey(priv.Public().(ed25519.PublicKey)) + "\n")}
}

// mountSecrets returns, for a rendered Deployment, where its container's
// Secret volumes of secrets would be mounted (mount path → a directory
// under dir holding the volume's items, as the kubelet would write them),
// so that the settings naming files there can be pointed at them.
func mountSecrets(t *testing.T, dir string, secrets map[string]map[string][]byte) func(d *object) map[string]string {
	return func(d *object) map[string]string {
		t.Helper()
		out := map[string]string{}
		pod := d.Spec.Template.Spec
		for _, v := range pod.Volumes {
			if v.Secret == nil {
				continue
			}
			data, ok := secrets[v.Secret.SecretName]
			if !ok {
				continue
			}
			for _, m := range pod.Containers[0].VolumeMounts {
				if m.Name != v.Name {
					continue
				}
				local := filepath.Join(dir, "mounts", d.Metadata.Name, v.Name)
				if err := os.MkdirAll(local, 0o700); err != nil {
					t.Fatal(err)
				}
				for _, it := range v.Secret.Items {
					b, ok := data[it.Key]
					if !ok {
						t.Fatalf("%s: volume %s names key %s, which Secret %s lacks", d.Metadata.Name, v.Name, it.Key, v.Secret.SecretName)
					}
					if err := os.WriteFile(filepath.Join(local, it.Path), b, 0o600); err != nil {
						t.Fatal(err)
					}
				}
				out[m.MountPath] = local
			}
		}
		return out
	}
}
