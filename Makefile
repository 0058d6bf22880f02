# Garden Bloom Memory — build entry points. Every tool is pinned and installed
# into ./bin with `go install`; nothing is expected on the machine but Go and git.

SHELL := /bin/bash
BIN   := $(CURDIR)/bin
GO    ?= go
# The Go toolchain of every recipe, tool install and test: go1.26.8 has
# known vulnerabilities in net/http, crypto/tls, html/template, ... that
# govulncheck (make lint) reports; go1.27.3 has none. A go older than
# that downloads it from the module proxy once (go.mod also says go 1.27.3,
# so a plain `go build` with GOTOOLCHAIN=local fails instead of silently
# building with an older one). Plain go outside make: export GOTOOLCHAIN=go1.27.3.
export GOTOOLCHAIN := go1.27.3
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
# Offline checks of deploy/ (make validate-deploy): kubeconform against the
# API schemas of this Kubernetes release, and compose's own `config`.
KUBECONFORM_VERSION         := v0.8.0
K8S_SCHEMA_VERSION          := v1.36.3
COMPOSE_VERSION             := v2.40.3
# promtool checks and unit-tests deploy/prometheus's alert rules.
PROMTOOL_VERSION            := v0.316.0
# govulncheck (make lint) and the vulnerability data it reads: the online
# database (vuln.go.dev) is unreachable here, so make vulndb builds a local
# one from this version of the module golang.org/x/vulndb with its own gendb.
GOVULNCHECK_VERSION         := v1.9.0
# golangci-lint (make lint) with the linters .golangci.yml names.
GOLANGCI_LINT_VERSION       := v2.15.0
VULNDB_VERSION              := v0.0.0-20261105234957-e22db6528018

VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X github.com/garden-bloom/memory/cmd/memoryd/app.Version=$(VERSION)
DATA_DIR ?= ./data

.PHONY: all tools deploy-tools generate lint vulndb vulncheck build run test test-race invariants fuzz bench soak bench-go bench-quality check-generated validate-deploy image image-push compose-env k8s-dev-secrets clean

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
$(BIN)/.kubeconform-$(KUBECONFORM_VERSION):
	$(GO) install github.com/yannh/kubeconform/cmd/kubeconform@$(KUBECONFORM_VERSION) && touch $@
$(BIN)/.promtool-$(PROMTOOL_VERSION):
	$(GO) install github.com/prometheus/prometheus/cmd/promtool@$(PROMTOOL_VERSION) && touch $@
# docker compose cannot be `go install`ed (its module is built from its own
# folder): copy the module out of the module cache and build ./cmd there. The
# binary runs standalone as bin/docker-compose, with no docker CLI or engine;
# it is also linked as a CLI plugin for a machine that has a docker CLI:
# DOCKER_CONFIG=bin/docker docker compose ...
COMPOSE_SRC := $(CURDIR)/.cache/compose-src-$(COMPOSE_VERSION)
$(BIN)/.docker-compose-$(COMPOSE_VERSION):
	cd / && $(GO) mod download github.com/docker/compose/v2@$(COMPOSE_VERSION)
	rm -rf $(COMPOSE_SRC) && mkdir -p $(dir $(COMPOSE_SRC)) && \
	cp -R "$$($(GO) env GOMODCACHE)/github.com/docker/compose/v2@$(COMPOSE_VERSION)" $(COMPOSE_SRC) && \
	chmod -R u+w $(COMPOSE_SRC)
	cd $(COMPOSE_SRC) && $(GO) build -buildvcs=false -trimpath \
	  -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$(COMPOSE_VERSION)" \
	  -o $(BIN)/docker-compose ./cmd
	rm -rf $(COMPOSE_SRC)
	mkdir -p $(BIN)/docker/cli-plugins && ln -sf ../../docker-compose $(BIN)/docker/cli-plugins/docker-compose
	touch $@

# Kubernetes JSON schemas for kubeconform, generated offline from
# k8s.io/kubernetes's api/openapi-spec/swagger.json (in the Go module cache)
# by deploy/tools/k8sschema, a module of its own.
K8S_SCHEMA_DIR := $(CURDIR)/.cache/k8s-schemas/$(K8S_SCHEMA_VERSION)
K8SSCHEMA_SRC  := $(wildcard deploy/tools/k8sschema/*.go) deploy/tools/k8sschema/go.mod
$(BIN)/k8sschema: $(K8SSCHEMA_SRC)
	cd deploy/tools/k8sschema && $(GO) vet . && $(GO) test -count=1 . && $(GO) build -o $@ .
$(K8S_SCHEMA_DIR)/.stamp: $(BIN)/k8sschema
	$(BIN)/k8sschema -module k8s.io/kubernetes@$(K8S_SCHEMA_VERSION) -out $(K8S_SCHEMA_DIR) && touch $@

# govulncheck type-checks the code with the go/types it was built with, so
# its stamp also names the Go toolchain: a new GOTOOLCHAIN rebuilds it.
GOLANGCI_LINT_STAMP := $(BIN)/.golangci-lint-$(GOLANGCI_LINT_VERSION)-$(GOTOOLCHAIN)
$(GOLANGCI_LINT_STAMP):
	$(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION) && touch $@
GOVULNCHECK_STAMP := $(BIN)/.govulncheck-$(GOVULNCHECK_VERSION)-$(GOTOOLCHAIN)
$(GOVULNCHECK_STAMP):
	$(GO) install golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION) && touch $@
# The local vulnerability database, built once per VULNDB_VERSION: gendb
# (cmd/gendb of golang.org/x/vulndb) converts the module's data/reports
# into the database layout govulncheck reads with -db file://DIR. gendb
# wants a git repository, so the module is copied out of the module cache
# into a throw-away folder that becomes one (a repository of its own,
# inside the gitignored .cache).
VULNDB_DIR := $(CURDIR)/.cache/vulndb/$(VULNDB_VERSION)
VULNDB_SRC := $(CURDIR)/.cache/vulndb-src-$(VULNDB_VERSION)
$(VULNDB_DIR)/.stamp:
	cd / && $(GO) mod download golang.org/x/vulndb@$(VULNDB_VERSION)
	rm -rf $(VULNDB_SRC) $(VULNDB_DIR) && mkdir -p $(dir $(VULNDB_SRC)) && \
	cp -R "$$(cd / && $(GO) env GOMODCACHE)/golang.org/x/vulndb@$(VULNDB_VERSION)" $(VULNDB_SRC) && \
	chmod -R u+w $(VULNDB_SRC)
	cd $(VULNDB_SRC) && git init -q && git add -A && \
	git -c user.name=vulndb -c user.email=vulndb@localhost -c commit.gpgsign=false commit -q -m "golang.org/x/vulndb@$(VULNDB_VERSION)"
	cd $(VULNDB_SRC) && $(GO) run ./cmd/gendb -repo . -out $(VULNDB_DIR)
	rm -rf $(VULNDB_SRC)
	touch $@
GOVULNCHECK := govulncheck -db file://$(VULNDB_DIR)

PROTO_TOOLS := $(BIN)/.buf-$(BUF_VERSION) $(BIN)/.protoc-gen-go-$(PROTOC_GEN_GO_VERSION) \
	$(BIN)/.protoc-gen-go-grpc-$(PROTOC_GEN_GO_GRPC_VERSION) $(BIN)/.grpc-gateway-$(GRPC_GATEWAY_VERSION)

## tools: install every pinned tool into ./bin (deploy-tools: those of validate-deploy)
tools: $(PROTO_TOOLS) $(BIN)/.grpcurl-$(GRPCURL_VERSION) $(BIN)/.minio-$(MINIO_VERSION) $(GOVULNCHECK_STAMP) $(VULNDB_DIR)/.stamp \
	$(GOLANGCI_LINT_STAMP)
deploy-tools: $(BIN)/.kubeconform-$(KUBECONFORM_VERSION) $(K8S_SCHEMA_DIR)/.stamp $(BIN)/.docker-compose-$(COMPOSE_VERSION) \
	$(BIN)/.promtool-$(PROMTOOL_VERSION)

## generate: regenerate gen/ (Go, grpc-gateway, OpenAPI) from proto/, and
## gen/descriptor/memory.binpb: every proto of the workspace (ours, the
## vendored googleapis, their imports) as a FileDescriptorSet that keeps the
## comments (SourceCodeInfo), which the generated Go code drops; server
## reflection serves it (pkg/grpcserver), so grpcurl describe shows them.
generate: $(PROTO_TOOLS)
	buf generate
	buf build -o gen/descriptor/memory.binpb
	$(OPENAPI31_GEN)

# gen/openapi/memory.openapi.json, the OpenAPI 3.1 document served at
# /openapi.json and /docs: cmd/openapigen converts protoc-gen-openapiv2's
# Swagger 2.0 output with the descriptors of `buf build` (enum names as on
# the wire, bearer auth, error responses); part of generate.
define OPENAPI31_GEN
$(GO) run ./cmd/openapigen -descriptors gen/descriptor/memory.binpb -swagger gen/openapi/memory.swagger.json -out gen/openapi/memory.openapi.json
endef

## lint: buf lint (STANDARD) + buf breaking + go vet + golangci-lint
## (.golangci.yml) + gofmt + govulncheck (fails on any
## reachable vulnerability, with the local database of make vulndb)
lint: $(BIN)/.buf-$(BUF_VERSION) $(GOVULNCHECK_STAMP) $(VULNDB_DIR)/.stamp $(GOLANGCI_LINT_STAMP) breaking
	buf lint
	$(GO) vet ./...
	golangci-lint run ./...
	@out=$$("$$($(GO) env GOROOT)/bin/gofmt" -l $$(git ls-files '*.go' | grep -v '^gen/')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GOVULNCHECK) ./...

## breaking: the API (proto/) stays wire- and JSON-compatible with the last
## release (part of lint). The release is named by its commit, so a clone
## without tags checks it too; move it when a release is cut (CHANGELOG.md).
BUF_BREAKING_AGAINST ?= .git\#ref=c46e1d1c04e6d2e8a082778144424ce54f44c9fc
.PHONY: breaking
breaking: $(BIN)/.buf-$(BUF_VERSION)
	buf breaking --against '$(BUF_BREAKING_AGAINST)'

## vulndb: build the local vulnerability database (once per VULNDB_VERSION)
## vulncheck: govulncheck alone (part of lint)
vulndb: $(VULNDB_DIR)/.stamp
vulncheck: $(GOVULNCHECK_STAMP) $(VULNDB_DIR)/.stamp
	$(GOVULNCHECK) ./...

## check-generated: fail when `make generate` changes gen/
check-generated: generate
	@git add -N gen >/dev/null 2>&1 || true
	@if ! git diff --quiet -- gen; then echo "gen/ is stale: run make generate and commit"; git diff --stat -- gen; exit 1; fi

## build: build bin/memoryd and bin/memctl (the client CLI, docs/cli.md)
build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/memoryd ./cmd/memoryd
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/memctl ./cmd/memctl

## run: the whole suite on the embedded default (./data), printing a token
run: build
	@token=$$($(BIN)/memoryd token --data-dir $(DATA_DIR) --sub dev --role admin --role reviewer --role service --agent '*' --ttl 24h) && \
	echo "" && \
	echo "Garden Bloom Memory: gRPC 127.0.0.1:9090, REST http://127.0.0.1:8080 (data in $(DATA_DIR))" && \
	echo "A token for every role, valid 24h:" && \
	echo "  export TOKEN=$$token" && \
	echo "Try: curl -s 127.0.0.1:8080/health   and   bin/grpcurl -plaintext 127.0.0.1:9090 list" && \
	echo "Review console: http://127.0.0.1:8080/ui/   (sign in by pasting the token above)" && \
	echo ""
	$(BIN)/memoryd --data-dir $(DATA_DIR)

## test: every test, including the multi-process integration tests and the
## S3 driver against a real MinIO server (built once into ./bin)
test: build $(BIN)/.minio-$(MINIO_VERSION)
	MINIO_BIN=$(BIN)/minio $(GO) test -race -count=1 ./...

## fuzz: every Go fuzz target of the repo (func FuzzX in a _test.go), one
## after another, each for FUZZTIME: a duration or a count of executions (CI:
## make fuzz FUZZTIME=20000x, since a duration can fail spuriously on Go 1.26,
## golang/go#75804). Targets are
## discovered with go test -list, so new ones are picked up; FUZZFLAGS adds
## flags (e.g. FUZZFLAGS=-parallel=1 on a shared machine). A crasher is
## written to <pkg>/testdata/fuzz/<Target>/ and fails plain go test from then.
FUZZTIME  ?= 10m
FUZZFLAGS ?=
fuzz:
	@set -e; files=$$($(GO) list -f '{{range .TestGoFiles}}{{$$.Dir}}/{{.}} {{end}}{{range .XTestGoFiles}}{{$$.Dir}}/{{.}} {{end}}' ./...); \
	pkgs=$$(grep -l -E '^func Fuzz[A-Za-z0-9_]*\(' $$files | xargs -r -n1 dirname | sort -u | sed 's|^$(CURDIR)|.|'); \
	[ -n "$$pkgs" ] || { echo "no fuzz targets"; exit 0; }; \
	for pkg in $$pkgs; do \
	  list=$$($(GO) test -list '^Fuzz' $$pkg); \
	  for target in $$(echo "$$list" | grep '^Fuzz'); do \
	    echo "== fuzz $$pkg $$target ($(FUZZTIME))"; \
	    $(GO) test $$pkg -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS); \
	  done; \
	done

## invariants: the long model-based invariant run (services/invariants; `make test`
## runs it short). INVARIANT_PROPOSALS steps; INVARIANT_SEED=<n>|random replays or varies the seed.
INVARIANT_PROPOSALS ?= 10000
invariants:
	INVARIANT_PROPOSALS=$(INVARIANT_PROPOSALS) $(GO) test ./services/invariants -run TestModel -count=1 -timeout 60m -v

## bench: membench perf — the real memoryd (all-in-one and split) under load on a
## synthetic monorepo (1,000 agents, 20,000 commits) plus the scaling runs; tables
## and budgets on stdout, JSON and Markdown in bench/results/. Generated data sets
## are cached in BENCH_WORK; BENCH_FLAGS adds flags (e.g. BENCH_FLAGS=--scales=none).
BENCH_WORK  ?= $(CURDIR)/.cache/membench
BENCH_FLAGS ?=
bench:
	$(GO) run ./cmd/membench perf --work $(BENCH_WORK) $(BENCH_FLAGS)

## bench-slowclients: membench slowclients — issue #25's done-when line: 2,000
## slow-body connections (a byte a second) all cut within --http-body-timeout
## (30s) while ReadMemory REST p95 stays under 5 ms; about a minute.
.PHONY: bench-slowclients
bench-slowclients:
	$(GO) run ./cmd/membench slowclients $(BENCH_FLAGS)

## soak: membench soak — bin/memoryd all-in-one on an empty data dir, 100
## agents, mixed load (proposals at SOAK_RATE/s: facts, loops, decisions,
## auto-approved, reviewer-approved and rejected; reads, search, context,
## proposals, diffs) for SOAK_DURATION; fails on any request error or when
## anonymous RSS or the heap after GC trends upward after warm-up (fitted
## slope) beyond 10 % and what its bounded caches may still fill. Curve on
## stdout, JSON and Markdown in bench/results/soak-*.
## SOAK_FLAGS adds flags (e.g. SOAK_FLAGS=--profile=.cache/soak-prof).
SOAK_DURATION ?= 10m
SOAK_RATE     ?= 40
SOAK_FLAGS    ?=
soak: build
	$(GO) run ./cmd/membench soak --memoryd $(BIN)/memoryd --duration $(SOAK_DURATION) --rate $(SOAK_RATE) $(SOAK_FLAGS)

## bench-ingest: membench ingest — issue #27's done-when line: 1,000 generated
## episodes over 10 agents through bin/memctl ingest --wait against bin/memoryd
## (all-in-one, fresh data dir per run); median episodes/s of 3 runs, budget
## >= 100/s. BENCH_FLAGS adds flags (e.g. BENCH_FLAGS="--agents 1 --runs 5").
.PHONY: bench-ingest
bench-ingest: build
	$(GO) run ./cmd/membench ingest --memoryd $(BIN)/memoryd --memctl $(BIN)/memctl $(BENCH_FLAGS)

## bench-console: membench console — issue #28's done-when line: every review
## console page (Agents, an agent's tabs, History, a commit diff, Inbox, a
## proposal, …) signed in like a browser against bin/memoryd --target=all on
## 1,000 generated agents; 200 sequential GETs per page after 20 warm-ups,
## budget p95 <= 50 ms and every answer 200. Results in bench/results/console-*.
.PHONY: bench-console
bench-console: build
	$(GO) run ./cmd/membench console --memoryd $(BIN)/memoryd $(BENCH_FLAGS)

## screenshots: the README's pictures of the review console — the Chromium
## test (TestConsoleInABrowser) against a real memoryd writes agents, agent,
## inbox, proposal, entity, decisions and search at 1280x800 and inbox-phone
## at phone width to docs/screenshots/*.png. Needs Debian chromium.
.PHONY: screenshots
screenshots:
	@command -v chromium >/dev/null || { echo "make screenshots needs chromium (apt-get install chromium)"; exit 1; }
	CONSOLE_SCREENSHOTS=$(CURDIR)/docs/screenshots $(GO) test ./cmd/memoryd/ -run '^TestConsoleInABrowser$$' -count=1

## bench-go: the Go micro-benchmarks (figures, never pass/fail in unit tests)
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## bench-quality: retrieval quality on public data (skipped cleanly without it)
DATA ?= ../shared/data
bench-quality:
	$(GO) run ./cmd/membench quality --data $(DATA)

## api-lint: Redocly CLI (pinned in deploy/tools/apiclient) lints
## gen/openapi/memory.openapi.json; zero errors and warnings wanted
## api-client-test: api-lint, then a TypeScript client generated from the
## document (openapi-typescript, tsc) runs propose -> approve -> read against
## a real memoryd (bin/memoryd on loopback, throw-away data dir). Node + npm.
.PHONY: api-lint api-client-test
APICLIENT_DIR := deploy/tools/apiclient
api-lint:
	cd $(APICLIENT_DIR) && npm ci --no-audit --no-fund --loglevel=error && npm run --silent lint
api-client-test: build
	$(APICLIENT_DIR)/run.sh

## mcp-client-test: the MCP server driven by the official TypeScript SDK
## client (@modelcontextprotocol/sdk, pinned in deploy/tools/mcpclient) over
## streamable HTTP (/mcp on the edge) and stdio (bin/memctl mcp): initialize,
## every tool, a Layer 1 resource, refused calls; against a real memoryd
## (bin/memoryd on loopback, throw-away data dir). Node + npm.
.PHONY: mcp-client-test
mcp-client-test: build
	deploy/tools/mcpclient/run.sh

## image: build the memoryd image $(IMAGE):$(IMAGE_TAG) (deploy/Dockerfile), the
## name and tag docker-compose.yml and deploy/kubernetes/kustomization.yaml
## use (validate-deploy checks it); without docker, print the command
IMAGE     ?= ghcr.io/garden-bloom/memoryd
IMAGE_TAG ?= 0.1.0
IMAGE_BUILD := docker build -f deploy/Dockerfile --build-arg VERSION=$(IMAGE_TAG) -t $(IMAGE):$(IMAGE_TAG) .
image:
	@if command -v docker >/dev/null 2>&1; then echo '$(IMAGE_BUILD)'; $(IMAGE_BUILD); \
	else echo "docker not found; build the image with:"; echo "  $(IMAGE_BUILD)"; fi
## image-push: push $(IMAGE):$(IMAGE_TAG) (after make image)
image-push:
	docker push $(IMAGE):$(IMAGE_TAG)

## compose-env: random MinIO/S3 credentials for docker-compose.yml in
## deploy/compose.env, once (gitignored); k8s-dev-secrets: the same for the
## overlay deploy/kubernetes-dev (minio.env, auth.secret)
compose-env:
	deploy/dev-secrets.sh compose
k8s-dev-secrets:
	deploy/dev-secrets.sh kubernetes

## validate-deploy: offline checks of deploy/kubernetes (kubeconform -strict
## against Kubernetes $(K8S_SCHEMA_VERSION)'s API) and docker-compose.yml
## (compose config), the dev overlay deploy/kubernetes-dev, and one memoryd
## image and one MinIO tag everywhere; the Prometheus alert rules (promtool
## check rules, promtool test rules) and the Grafana dashboard (it parses,
## and it and the alerts query only metrics a running memoryd exports); no
## cluster, Docker engine or docker CLI needed
K8S_DIR       := deploy/kubernetes
K8S_DEV_DIR   := deploy/kubernetes-dev
K8S_MANIFESTS := $(filter-out %/kustomization.yaml,$(wildcard $(K8S_DIR)/*.yaml $(K8S_DEV_DIR)/*.yaml))
VALIDATE_DIR  := $(CURDIR)/.cache/validate-deploy
validate-deploy: deploy-tools
	@# kustomization.yaml is no Kubernetes object: check that it lists files
	@# that exist and every manifest but the example Secrets.
	@status=0; for d in $(K8S_DIR) $(K8S_DEV_DIR); do \
	  listed=$$(cd $$d && sed -n 's/^  - \([^ ]*\.yaml\)$$/\1/p' kustomization.yaml); \
	  for f in $$listed; do [ -f "$$d/$$f" ] || { echo "$$d/kustomization.yaml lists $$f, which does not exist"; status=1; }; done; \
	  for f in $$(cd $$d && ls *.yaml); do case "$$f" in kustomization.yaml|*.example.yaml) continue;; esac; \
	    echo "$$listed" | grep -qx "$$f" || { echo "$$d/$$f is not in kustomization.yaml"; status=1; }; done; \
	done; exit $$status
	@# One memoryd image (the Makefile's IMAGE:IMAGE_TAG) and one MinIO tag in
	@# compose and Kubernetes; no floating tags.
	@status=0; want='$(IMAGE):$(IMAGE_TAG)'; \
	for f in docker-compose.yml $(K8S_DIR)/*.yaml $(K8S_DEV_DIR)/*.yaml; do \
	  for img in $$(sed -n 's/^ *image: *\([^ #]*\).*/\1/p' $$f); do \
	    case "$$img" in *memoryd*) [ "$$img" = "$$want" ] || { echo "$$f: image $$img, want $$want (IMAGE, IMAGE_TAG)"; status=1; };; esac; \
	    case "$${img##*/}" in *:*) ;; *) echo "$$f: image $$img has no tag"; status=1;; esac; \
	    case "$$img" in *:latest) echo "$$f: image $$img: pin a version"; status=1;; esac; \
	  done; done; \
	grep -q '^  - name: $(IMAGE)$$' $(K8S_DIR)/kustomization.yaml && grep -q '^    newTag: $(IMAGE_TAG)$$' $(K8S_DIR)/kustomization.yaml || \
	  { echo "$(K8S_DIR)/kustomization.yaml: images must pin $(IMAGE) to newTag $(IMAGE_TAG)"; status=1; }; \
	minio=$$(cat docker-compose.yml $(K8S_DEV_DIR)/*.yaml | sed -n 's/^ *image: *\(quay.io\/minio\/minio:[^ #]*\).*/\1/p' | sort -u); \
	[ $$(echo "$$minio" | wc -l) = 1 ] || { echo "MinIO images differ: $$minio"; status=1; }; \
	[ $$status = 0 ] && echo "images: $$want, $$minio"; exit $$status
	kubeconform -strict -summary -schema-location '$(K8S_SCHEMA_DIR)/{{ .ResourceKind }}{{ .KindSuffix }}.json' $(K8S_MANIFESTS)
	@# The rendered overlays too, where kubectl is installed (optional).
	@if command -v kubectl >/dev/null 2>&1; then \
	  rm -rf $(VALIDATE_DIR) && mkdir -p $(VALIDATE_DIR) && cp -R $(K8S_DIR) $(K8S_DEV_DIR) $(VALIDATE_DIR)/ && \
	  rm -f $(VALIDATE_DIR)/kubernetes-dev/minio.env $(VALIDATE_DIR)/kubernetes-dev/auth.secret && \
	  deploy/dev-secrets.sh kubernetes $(VALIDATE_DIR)/kubernetes-dev >/dev/null && \
	  for d in kubernetes kubernetes-dev; do kubectl kustomize $(VALIDATE_DIR)/$$d > $(VALIDATE_DIR)/$$d.rendered.yaml || exit 1; done && \
	  kubeconform -strict -summary -schema-location '$(K8S_SCHEMA_DIR)/{{ .ResourceKind }}{{ .KindSuffix }}.json' $(VALIDATE_DIR)/*.rendered.yaml; \
	else echo "kubectl not found: kustomize builds not rendered (optional)"; fi
	@# compose needs its env file: validate with a throw-away one, never
	@# with (or creating) deploy/compose.env.
	@mkdir -p $(VALIDATE_DIR) && rm -f $(VALIDATE_DIR)/compose.env && deploy/dev-secrets.sh compose $(VALIDATE_DIR)/compose.env >/dev/null
	MEMORYD_COMPOSE_ENV=$(VALIDATE_DIR)/compose.env DOCKER_CONFIG=$(BIN)/docker docker-compose -f docker-compose.yml config -q
	@rm -rf $(VALIDATE_DIR)
	@echo "docker-compose.yml: valid (docker compose $(COMPOSE_VERSION))"
	promtool check rules deploy/prometheus/alerts.yaml
	cd deploy/prometheus && promtool test rules alerts_test.yaml
	@# Starts memoryd, drives traffic and compares every metric name in the
	@# dashboard's and the alerts' PromQL with what /metrics serves.
	$(GO) test ./cmd/memoryd -run '^(TestDeployFilesUseExportedMetrics|TestPromQLMetricNames)$$' -count=1

clean:
	rm -rf $(BIN)/memoryd $(BIN)/memctl .cache
