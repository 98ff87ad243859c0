# jetjob — see README.md. `make run` starts a whole system; `make test` runs every test.
SHELL := /bin/bash
GO ?= go
BIN := bin
STATICCHECK_VERSION ?= v0.8.2
BINARIES := jetjob-scheduler jetjob

.PHONY: all build run test test-unit lint fmt ensure-postgres clean

all: build

build:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -o $(BIN)/jetjob-scheduler ./scheduler/cmd/jetjob-scheduler
	CGO_ENABLED=0 $(GO) build -o $(BIN)/jetjob ./scheduler/cmd/jetjob

# PostgreSQL server binaries are needed by `dev` and by the tests (a
# throwaway server each); installed through apt when missing.
ensure-postgres:
	@bash deploy/ensure-postgres.sh

run: ensure-postgres build
	$(BIN)/jetjob-scheduler dev

# Unit and integration tests against a real PostgreSQL and a real (embedded)
# NATS server, with the race detector.
test-unit: ensure-postgres
	$(GO) test -race -count=1 -timeout 20m ./...

test: test-unit

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN)
