# Drover. `make run` starts a worker on an embedded NATS server and feeds it the
# example board; `make test` runs every test against real NATS servers.
GO ?= go
BIN := bin/drover
PKGS := ./...

.PHONY: run build test test-short scale lint fmt bench fuzz clean

# staticcheck at a pinned version, installed into the Go bin directory when missing.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(shell $(GO) env GOPATH)/bin/staticcheck

build:
	$(GO) build -o $(BIN) ./cmd/drover

run: build
	$(BIN) serve --log-format text --submit examples/board.json

test:
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 -timeout 15m $(PKGS)

test-short:
	$(GO) test -count=1 -timeout 10m $(PKGS)

# The throughput of 1, 2 and 3 worker processes, a measurement the suite skips.
scale:
	DROVER_SCALE=1 $(GO) test -count=1 -timeout 15m -run '^TestScaleThroughput$$' -v ./tests/

lint:
	@$(STATICCHECK) -version 2>/dev/null | grep -q '$(STATICCHECK_VERSION:v%=%)' || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(STATICCHECK) $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

bench: build
	$(BIN) bench --tasks 3000 --concurrency 16 --sync 2m
	$(BIN) bench --tasks 3000 --concurrency 16 --sync always

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecodeTask -fuzztime 60s ./subjects/

clean:
	rm -rf bin .drover
