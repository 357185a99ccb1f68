# Drover. `make run` starts a worker on an embedded NATS server and feeds it the
# example board; `make test` runs every test against real NATS servers.
GO ?= go
BIN := bin/drover
PKGS := ./...

.PHONY: run build test test-short fmt bench fuzz clean

build:
	$(GO) build -o $(BIN) ./cmd/drover

run: build
	$(BIN) serve --log-format text --submit examples/board.json

test:
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 -timeout 15m $(PKGS)

test-short:
	$(GO) test -count=1 -timeout 10m $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

bench: build
	$(BIN) bench --tasks 3000 --concurrency 16 --sync 2m
	$(BIN) bench --tasks 3000 --concurrency 16 --sync always

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecodeTask -fuzztime 60s ./subjects/

clean:
	rm -rf bin .drover
