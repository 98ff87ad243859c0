package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/jetjob/jetjob/internal/testtier"
)

// Images, from the same variables and defaults as deploy/e2e-images.sh
// (which `make e2e` runs first).
var (
	postgresImage  = envOr("JETJOB_E2E_POSTGRES_IMAGE", "jetjob-e2e/postgres:15")
	natsImage      = envOr("JETJOB_E2E_NATS_IMAGE", "jetjob-e2e/nats:2.15")
	schedulerImage = envOr("JETJOB_E2E_SCHEDULER_IMAGE", "jetjob-e2e/scheduler:dev")
	workerImage    = envOr("JETJOB_E2E_WORKER_IMAGE", "jetjob-e2e/worker:dev")
)

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func TestMain(m *testing.M) {
	// Ryuk, testcontainers' reaper, is an image that cannot be pulled here;
	// every test removes its containers and network itself. Exactly "true":
	// testcontainers reads the variable at its first use, after this.
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	// Published ports are reached on the loopback address. Left alone,
	// testcontainers guesses the host from its surroundings: inside a
	// container (a CI sandbox) it picks the default gateway, which is not
	// where a local Docker engine publishes its ports.
	if os.Getenv("TESTCONTAINERS_HOST_OVERRIDE") == "" && localDocker() {
		os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
	}
	// Its own progress lines go to each test's log (see cluster.run).
	tclog.SetDefault(tclog.NewNoopLogger())
	// The short tier starts no container: every test skips (newCluster).
	// Elsewhere missing images skip every test too, naming make e2e, except
	// under make (testtier.Required): then they fail the run here, at once.
	if !testtier.Short() {
		if noImages = checkImages(); noImages != nil && testtier.Required() {
			fmt.Fprintf(os.Stderr, "e2e: needs %s: %v\n", imagesWhat, noImages)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// noImages is why the suite cannot run: images are missing (checkImages).
var noImages error

// imagesWhat and imagesTarget name the suite's prerequisite in a skip.
const (
	imagesWhat   = "the e2e images"
	imagesTarget = "make e2e"
)

// needsCluster skips t in the short tier and where the images are
// missing (testtier.Missing: under make, that fails instead).
func needsCluster(t *testing.T) {
	t.Helper()
	testtier.Needs(t, testtier.Docker)
	if noImages != nil {
		testtier.Missing(t, imagesWhat, noImages, imagesTarget)
	}
}

// localDocker reports whether the Docker engine is this machine's (a unix
// socket): then its published ports are on 127.0.0.1, and the suite's
// bind mounts (the witness directory, the NATS configuration) work.
func localDocker() bool {
	h := os.Getenv("DOCKER_HOST")
	return h == "" || strings.HasPrefix(h, "unix://")
}

// checkImages fails early, with the remedy, when an image is missing:
// testcontainers would try to pull it, and no registry is reachable.
func checkImages() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var missing []string
	for _, img := range []string{postgresImage, natsImage, schedulerImage, workerImage} {
		if err := exec.CommandContext(ctx, "docker", "image", "inspect", img).Run(); err != nil {
			missing = append(missing, img)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("images missing: %s; `make e2e-images` (deploy/e2e-images.sh) builds them, `make e2e` builds them and runs the suite",
			strings.Join(missing, ", "))
	}
	return nil
}
