# Garden Bloom Memory — build entry points. Every tool is pinned and installed
# into ./bin with `go install`; nothing is expected on the machine but Go and git.

SHELL := /bin/bash
BIN   := $(CURDIR)/bin
GO    ?= go
export GOBIN := $(BIN)
export PATH  := $(BIN):$(PATH)
# buf writes a cache even when offline; keep it inside the project.
export BUF_CACHE_DIR := $(CURDIR)/.cache/buf

BUF_VERSION                 := v1.75.0
PROTOC_GEN_GO_VERSION       := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION  := v1.6.2
GRPC_GATEWAY_VERSION        := v2.32.0
GRPCURL_VERSION             := v1.9.4
# The MinIO server the S3 driver's tests run against (real, on loopback).
MINIO_VERSION               := v0.0.0-20260212201848-7aac2a2c5b7c

VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X github.com/garden-bloom/memory/cmd/memoryd/app.Version=$(VERSION)
DATA_DIR ?= ./data

.PHONY: all tools generate lint build run test test-race bench bench-quality check-generated clean

all: build

# Each tool is built once per pinned version; the stamp file records the version.
$(BIN)/.buf-$(BUF_VERSION):
	$(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION) && touch $@
$(BIN)/.protoc-gen-go-$(PROTOC_GEN_GO_VERSION):
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION) && touch $@
$(BIN)/.protoc-gen-go-grpc-$(PROTOC_GEN_GO_GRPC_VERSION):
	$(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION) && touch $@
$(BIN)/.grpc-gateway-$(GRPC_GATEWAY_VERSION):
	$(GO) install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway@$(GRPC_GATEWAY_VERSION) && \
	$(GO) install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2@$(GRPC_GATEWAY_VERSION) && touch $@
$(BIN)/.grpcurl-$(GRPCURL_VERSION):
	$(GO) install github.com/fullstorydev/grpcurl/cmd/grpcurl@$(GRPCURL_VERSION) && touch $@
$(BIN)/.minio-$(MINIO_VERSION):
	$(GO) install github.com/minio/minio@$(MINIO_VERSION) && touch $@

PROTO_TOOLS := $(BIN)/.buf-$(BUF_VERSION) $(BIN)/.protoc-gen-go-$(PROTOC_GEN_GO_VERSION) \
	$(BIN)/.protoc-gen-go-grpc-$(PROTOC_GEN_GO_GRPC_VERSION) $(BIN)/.grpc-gateway-$(GRPC_GATEWAY_VERSION)

## tools: install every pinned tool into ./bin
tools: $(PROTO_TOOLS) $(BIN)/.grpcurl-$(GRPCURL_VERSION) $(BIN)/.minio-$(MINIO_VERSION)

## generate: regenerate gen/ (Go, grpc-gateway, OpenAPI) from proto/
generate: $(PROTO_TOOLS)
	buf generate

## lint: buf lint (STANDARD) + go vet + gofmt
lint: $(BIN)/.buf-$(BUF_VERSION)
	buf lint
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## check-generated: fail when `make generate` changes gen/
check-generated: generate
	@git add -N gen >/dev/null 2>&1 || true
	@if ! git diff --quiet -- gen; then echo "gen/ is stale: run make generate and commit"; git diff --stat -- gen; exit 1; fi

## build: build bin/memoryd
build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/memoryd ./cmd/memoryd

## run: the whole suite on the embedded default (./data), printing a token
run: build
	@token=$$($(BIN)/memoryd token --data-dir $(DATA_DIR) --sub dev --role admin --role reviewer --role service --agent '*' --ttl 24h) && \
	echo "" && \
	echo "Garden Bloom Memory: gRPC 127.0.0.1:9090, REST http://127.0.0.1:8080 (data in $(DATA_DIR))" && \
	echo "A token for every role, valid 24h:" && \
	echo "  export TOKEN=$$token" && \
	echo "Try: curl -s 127.0.0.1:8080/health   and   bin/grpcurl -plaintext 127.0.0.1:9090 list" && \
	echo ""
	$(BIN)/memoryd --data-dir $(DATA_DIR)

## test: every test, including the multi-process integration tests and the
## S3 driver against a real MinIO server (built once into ./bin)
test: build $(BIN)/.minio-$(MINIO_VERSION)
	MINIO_BIN=$(BIN)/minio $(GO) test -race -count=1 ./...

## bench: benchmarks (figures, never pass/fail in unit tests)
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## bench-quality: retrieval quality on public data (skipped cleanly without it)
DATA ?= ../shared/data
bench-quality:
	$(GO) run ./cmd/membench quality --data $(DATA)

clean:
	rm -rf $(BIN)/memoryd .cache
