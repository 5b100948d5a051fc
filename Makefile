# floe's make targets. `make demo` and `make test` are the two a newcomer needs.
SHELL := /bin/bash
GO ?= go
BIN := bin
PLUGIN_DIR := $(BIN)/plugins
# Every plugin binary lives at <module dir>/cmd/floe-plugin-<name>.
PLUGIN_CMDS := $(wildcard plugins/*/cmd/floe-plugin-*)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS := -X github.com/floehq/floe/host/cli.Version=$(VERSION) -X github.com/floehq/floe/host/cli.Commit=$(COMMIT)
SERVICES_ENV ?= $(or $(FLOE_SERVICES_DIR),/tmp/floe-services)/env
GOLANGCI_LINT_VERSION := v2.15.0
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.5.1
TOOLS := $(CURDIR)/.tools

.PHONY: all build demo test unit lint bench soak soak-distributed proto services-up services-down clean

all: build

## build: bin/floe and bin/plugins/floe-plugin-*
build:
	@mkdir -p $(PLUGIN_DIR)
	$(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(BIN)/floe ./host/cmd/floe
	@for d in $(PLUGIN_CMDS); do \
		echo "go build $(PLUGIN_DIR)/$$(basename $$d)"; \
		$(GO) build -trimpath -ldflags "-s -w" -o $(PLUGIN_DIR)/$$(basename $$d) ./$$d || exit 1; \
	done

## demo: datagen -> Iceberg on the embedded defaults (SQLite catalog, local warehouse)
demo: build
	e2e/demo/run

## test: lint, then every test against real services it starts (and stops) itself
test: lint build
	e2e/run-tests

## unit: the tests that need no services (the others skip, saying why)
unit:
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v /e2e)

## lint: gofmt, go mod tidy -diff, go vet, golangci-lint (.golangci.yml), the Dockerfile check
lint:
	@echo "gofmt"; out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^sdk/internal/pb/')); \
		if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@echo "go mod tidy -diff"; $(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	$(GO) vet ./...
	@if [ ! -x $(TOOLS)/golangci-lint ]; then \
		echo "installing golangci-lint $(GOLANGCI_LINT_VERSION) into .tools (first run only)"; \
		GOBIN=$(TOOLS) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION); fi
	$(TOOLS)/golangci-lint run ./...
	e2e/lint-dockerfile

## bench: benchmarks against real services; prints tables
bench: build
	e2e/bench/run

## soak: the long crash soak (not part of make test)
soak: build
	e2e/soak/run

## soak-distributed: the distributed soak, 30 cycles over 3 workers (not part of make test)
soak-distributed: build
	e2e/soak/run --distributed

services-up:
	e2e/services/up

services-down:
	e2e/services/down

## proto: regenerate sdk/internal/pb with pinned generators (protoc from apt's protobuf-compiler)
proto:
	@command -v protoc >/dev/null || { echo "protoc missing: apt-get install -y protobuf-compiler"; exit 1; }
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	cd sdk && PATH=$(TOOLS):$$PATH protoc -I proto \
		--go_out=. --go_opt=module=github.com/floehq/floe/sdk \
		--go-grpc_out=. --go-grpc_opt=module=github.com/floehq/floe/sdk \
		proto/floe/plugin/v1/plugin.proto

clean:
	rm -rf $(BIN) data
