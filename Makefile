# jetjob — see README.md. `make run` starts a whole system; `make test` runs every test.
SHELL := /bin/bash
GO ?= go
BIN := bin
STATICCHECK_VERSION ?= v0.8.2

.PHONY: all build run test test-short test-unit e2e e2e-images lint fmt openapi ensure-postgres ensure-cc ensure-chromium ensure-mariadb ensure-slapd console-screenshots clean

all: build

# What --version, /healthz and the worker registry report (internal/version):
# without these, a build from a source tree is "(devel)", and without .git
# (or with -buildvcs=false) it has no commit either.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo "(devel)")
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
VERSION_PKG := github.com/jetjob/jetjob/internal/version
LDFLAGS := -X '$(VERSION_PKG).version=$(VERSION)' -X '$(VERSION_PKG).commit=$(COMMIT)' -X '$(VERSION_PKG).date=$(BUILD_DATE)'

build:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/jetjob-scheduler ./scheduler/cmd/jetjob-scheduler
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/jetjob ./scheduler/cmd/jetjob
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/jetjob-worker ./worker/cmd/jetjob-worker

# PostgreSQL server binaries are needed by `dev` and by the tests (a
# throwaway server each); installed through apt when missing.
ensure-postgres:
	@bash deploy/ensure-postgres.sh

# MariaDB server binaries are needed by the test of `jetjob import xxl-job`
# (a throwaway mariadbd holding xxl-job's tables); installed through apt when
# missing.
ensure-mariadb:
	@bash deploy/ensure-mariadb.sh

# OpenLDAP's slapd and slapadd are needed by the LDAP sign-in tests (a
# throwaway directory, scheduler/internal/ldaptest); installed through apt
# when missing.
ensure-slapd:
	@bash deploy/ensure-slapd.sh

# The race detector (go test -race) needs cgo, so a C compiler; installed
# through apt when missing.
ensure-cc:
	@bash deploy/ensure-cc.sh

# The console's browser tests drive a real headless Chromium (chromedp);
# Debian's chromium is installed through apt when missing.
ensure-chromium:
	@bash deploy/ensure-chromium.sh

# The README's pictures of the console (docs/img), taken by the browser
# tests that walk a job's life cycle, a workflow, the admin and alert
# pages and the languages (a real system, a real Chromium); and every page
# and page state of the layout test, at 1280 and 375 px, in English and
# Chinese, into bin/screenshots (not committed: look at them before
# committing a change to the console).
console-screenshots: ensure-postgres ensure-chromium
	JETJOB_TEST_REQUIRED=1 JETJOB_CONSOLE_SCREENSHOTS=$(CURDIR)/docs/img JETJOB_LAYOUT_SCREENSHOTS=$(CURDIR)/bin/screenshots $(GO) test -count=1 -run 'TestConsoleJobLifeCycle$$|TestConsoleWorkflow$$|TestConsoleAdminPages$$|TestConsoleAlerts$$|TestConsoleLanguages$$|TestConsoleLayoutHolds$$' ./scheduler/

run: ensure-postgres build
	$(BIN)/jetjob-scheduler dev

# The short tier: only the tests that need no server (no PostgreSQL, NATS,
# Chromium, MariaDB or Docker; internal/testtier decides): 30 to 75 s on
# 2 cores, idle or busy. Without the race detector: with it, linking the
# test binaries alone took 95 s, past the tier's 90 s budget. Nothing to
# install; results are cached by go test while nothing they read changed.
test-short:
	$(GO) test -short -timeout 5m ./...

# The JETJOB_TEST_REQUIRED=1 of the targets below: a test whose
# prerequisite is missing (server binaries, Chromium, helm, promtool, the
# e2e images) fails under make instead of skipping as a plain `go test`
# does (internal/testtier).
#
# Unit and integration tests against a real PostgreSQL and a real (embedded)
# NATS server, with the race detector: the full tier, every test of the
# short one included. The end-to-end suite (e2e/) is left to `make e2e`: it
# needs the container images and runs on its own; deploy/deploytest to
# `make deploy-test` (it needs helm and promtool).
#
# -parallel 4: the server tests (scheduler's above all) spend most of their
# time waiting for schedules, thresholds and restarts, not on the CPU, so
# four at a time per package (not GOMAXPROCS, two here) cut the scheduler
# package's tests from 608 s to 191 s on a 2-core machine (the whole
# `go test` of it from 11 to 3.3 minutes), and they pass so three times
# over beside a 2,000-jobs benchmark. Each such test has its own database
# and its own NATS; those that stop PostgreSQL have a server of their own
# (pgtest.OwnServer).
test-unit: ensure-postgres ensure-cc ensure-chromium ensure-mariadb ensure-slapd
	JETJOB_TEST_REQUIRED=1 $(GO) test -race -count=1 -parallel 4 -timeout 20m $$($(GO) list ./... | grep -v -e '^github.com/jetjob/jetjob/e2e' -e '^github.com/jetjob/jetjob/deploy/deploytest$$')

# Every test: the short tier first (a broken piece of logic fails in about
# a minute, not after the servers' tests), the full unit and integration
# tier, the deploy checks (Helm chart, alert rules, dashboard), then the
# end-to-end suite (in this order, also under make -j): 17 minutes on a
# fresh 2-core machine (README). Building helm and the e2e images while
# the full tier runs would save a few more, at the price of the load it
# adds to the tier's timing-sensitive tests.
test:
	@$(MAKE) --no-print-directory test-short
	@$(MAKE) --no-print-directory test-unit
	@$(MAKE) --no-print-directory helm-check rules-check deploy-test
	@$(MAKE) --no-print-directory e2e

.PHONY: helm-check rules-check deploy-test

# helm is built from its Go module once per version into
# bin/tools/helm-<version> (deploy/tools.sh; version there): the first run
# takes minutes, later ones nothing. promtool is Debian's (the prometheus
# package, 2.42: deploy/ensure-promtool.sh unpacks promtool alone from it
# into bin/tools, or takes a promtool on PATH or JETJOB_PROMTOOL).
#
# The Helm chart (deploy/helm/jetjob): helm lint --strict with each example
# values file (deploy-test renders and runs it).
helm-check:
	@helm=$$(bash deploy/tools.sh helm) && \
	for f in deploy/helm/examples/*.yaml; do $$helm lint --strict deploy/helm/jetjob -f $$f >/dev/null || { $$helm lint --strict deploy/helm/jetjob -f $$f; exit 1; }; echo "helm lint: $$f ok"; done

# The alert rules (deploy/prometheus): promtool check rules and promtool
# test rules (every alert firing and not firing).
rules-check:
	@promtool=$$(bash deploy/ensure-promtool.sh) && \
	$$promtool check rules deploy/prometheus/jetjob-rules.yaml && \
	(cd deploy/prometheus && $$promtool test rules jetjob-rules.test.yaml)

# deploy/deploytest with both tools: the chart rendered with each example
# values file (Deployments, Service, probes, ports, JETJOB_* settings) and
# its minimal install's scheduler and worker started with the chart's
# environment until their probes say ready; rules and dashboard naming only
# exported, documented series; every dashboard query parsed by promtool.
# (make test-unit leaves this package to here: it needs the tools.)
deploy-test: ensure-postgres
	@helm=$$(bash deploy/tools.sh helm) && promtool=$$(bash deploy/ensure-promtool.sh) && \
	JETJOB_TEST_REQUIRED=1 JETJOB_HELM=$$helm JETJOB_PROMTOOL=$$promtool $(GO) test -race -count=1 ./deploy/deploytest

# The images of the end-to-end suite and of deploy/docker-compose.yml, built
# without any registry (deploy/e2e-images.sh): PostgreSQL from Debian
# packages and NATS from the Go module are built once, the jetjob images
# whenever their binaries change.
e2e-images:
	@bash deploy/e2e-images.sh

# End-to-end suite: the real binaries in containers (testcontainers-go),
# with NATS, worker, scheduler and PostgreSQL outages injected. Each test
# removes its containers and network; Ryuk (testcontainers' reaper) cannot
# be pulled here, so it is off.
e2e: e2e-images
	JETJOB_TEST_REQUIRED=1 TESTCONTAINERS_RYUK_DISABLED=true $(GO) test -count=1 -timeout 40m -v ./e2e/...

# lint also refuses tracked files that .gitignore ignores: a build output
# committed by mistake (a 10 MB binary once was).
lint:
	@out=$$(git ls-files -ci --exclude-standard); if [ -n "$$out" ]; then echo "tracked but ignored (git rm --cached them):"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

# openapi rewrites scheduler/apiv1/openapi.json from the route table and
# its documentation (scheduler/internal/api/openapi.go) and the apiv1
# types; TestOpenAPIFileIsCurrent fails until it is rewritten and committed.
openapi:
	$(GO) test -short -count=1 -run '^TestOpenAPIFileIsCurrent$$' ./scheduler/internal/api/ -args -update

clean:
	rm -rf $(BIN)

# Benchmark harness (issue #7): steady 10000 jobs "@every 1s" for 60 s, then
# the planner's due-jobs read at 10 k, 100 k and 1 M jobs. It starts its own
# PostgreSQL and NATS. Other scenarios and knobs through ARGS, e.g.
#   make bench ARGS='--scenario steady --jobs 15000'
#   make bench ARGS='--scenario sparse'     (1 M jobs, ~1,000 fires/s; add --duration 210s
#                                            to let the planner's schedule cache fill up)
#   make bench ARGS='--scenario burst'      (50,000 fires in one second)
#   make bench ARGS='--scenario max'        (raise the rate until start lag p99 > 1 s)
#   make bench ARGS='--scenario overload --jobs 16000 --capacity 8000'
#                                           (offer twice the capacity max found, for 60 s:
#                                            succeeded/s as a % of --capacity, the fires the
#                                            misfire policy shed with their messages, lost,
#                                            duplicates; --misfire-policy, default fire_once)
#   make bench ARGS='--scenario coldstart --jobs 7000'
#                                           (steady on a fresh database, nothing analysed or
#                                            vacuumed, then every process restarted mid-run,
#                                            JetStream's store kept: both windows, the recovery
#                                            time, lost and duplicates over the whole run;
#                                            --restart-postgres=false keeps PostgreSQL up)
#   make bench ARGS='--scenario steady --jobs 7000 --schedulers 2 --workers 2'
#                                           (scale-out: compare "CPU per run" with 1 + 1)
#   make bench ARGS='--scenario steady --jobs 1000 --duration 30s --profile --nats-cluster 3'
#                                           (three NATS nodes, streams R3: messages, bytes,
#                                            WAL and index entries per run; docs/capacity.md)
#   make bench ARGS='--scenario river --jobs 10000 --duration 40s'
#                                           (the baseline: the same load run by River on the
#                                            same PostgreSQL; interleave with steady)
#   make bench ARGS='--scenario steady --handler sleep50 --profile'
#   make bench ARGS='--scenario burst --jobs 200 --handler shell --worker-concurrency 1'
#                                           (a process per run; see README, "Sizing workers")
#   make bench ARGS='--scenario steady --group-cap 1000 --group-rate 100000/10ms'
#                                           (flow controls set but holding nothing back:
#                                           docs/performance.md, "Pricing the flow controls")
# Results: a table on stdout, bench-results/<scenario>-<time>.json (fields
# documented in scheduler/cmd/jetjob-bench/result.go), child logs and profiles.
.PHONY: bench bench-river
bench: ensure-postgres
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -o $(BIN)/jetjob-bench ./scheduler/cmd/jetjob-bench
	@case "$(ARGS)" in *river*) $(MAKE) --no-print-directory bench-river;; esac
	$(BIN)/jetjob-bench $(ARGS)

# The River baseline of `--scenario river` (scheduler/cmd/jetjob-bench/river):
# its own module, so River never enters jetjob's go.mod.
bench-river:
	@mkdir -p $(BIN)
	cd scheduler/cmd/jetjob-bench/river && CGO_ENABLED=0 $(GO) build -o $(CURDIR)/$(BIN)/jetjob-bench-river .
