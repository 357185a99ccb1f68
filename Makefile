# Drover. `make run` starts a worker on an embedded NATS server and feeds it the
# example board; `make test` runs every test against real NATS servers;
# `make test-unit` runs the tests that need no server, git, sandbox or agent CLI.
GO ?= go
BIN := bin/drover
PKGS := ./...

.PHONY: run build test test-unit test-tools scale lint fmt bench fuzz clean

# golangci-lint at a pinned version, installed into the Go bin directory when
# missing; .golangci.yml says what it checks (staticcheck's default set,
# errcheck, testifylint).
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(shell $(GO) env GOPATH)/bin/golangci-lint

# The tools tests/contract_doc_test.go runs the contract's examples with: the nats
# CLI at a pinned version (into the Go bin directory, which the tests get on PATH)
# and the Node.js example's packages. The tests fail without them when CI is set.
NATSCLI_VERSION := v0.5.0
GOBIN_DIR := $(shell $(GO) env GOPATH)/bin

build:
	$(GO) build -o $(BIN) ./cmd/drover

run: build
	$(BIN) serve --log-format text --submit examples/board.json

test: export PATH := $(GOBIN_DIR):$(PATH)

test-tools:
	@PATH="$(GOBIN_DIR):$$PATH" command -v nats >/dev/null || $(GO) install github.com/nats-io/natscli/nats@$(NATSCLI_VERSION)
	@test -d examples/contract/js/node_modules || (cd examples/contract/js && npm install --no-audit --no-fund)

test: test-tools
	$(GO) vet $(PKGS)
	$(GO) vet -tags failpoints $(PKGS)
	$(GO) test -race -count=1 -timeout 15m $(PKGS)
	$(GO) test -race -count=1 -timeout 5m -tags failpoints -run '^(TestClaimLostWhileACommitIsPublished|TestACommitWaitsForTheEventsBeforeIt)$$' ./tests/

# The fast layer: with -short, every test that starts a NATS server or runs
# git, bwrap or an agent CLI skips (the helpers that start them skip it).
test-unit:
	$(GO) test -short -count=1 -timeout 5m $(PKGS)

# The throughput of 1, 2 and 3 worker processes, a measurement the suite skips.
scale:
	DROVER_SCALE=1 $(GO) test -count=1 -timeout 15m -run '^TestScaleThroughput$$' -v ./tests/

lint:
	@$(GOLANGCI_LINT) version 2>/dev/null | grep -qF ' $(GOLANGCI_LINT_VERSION:v%=%) ' || $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	$(GOLANGCI_LINT) run $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

bench: build
	$(BIN) bench --tasks 3000 --concurrency 16 --sync 2m
	$(BIN) bench --tasks 3000 --concurrency 16 --sync always

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecodeTask -fuzztime 60s ./subjects/

clean:
	rm -rf bin .drover
