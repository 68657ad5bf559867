# orderflow: the two commands are `make run` and `make test`.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
GO    ?= go
STACK := $(CURDIR)/.stack
# The stack profile of make stack-up, make chaos and make bench: dev (default) or
# cluster (see scripts/stack). make run always runs dev; make test runs both.
PROFILE ?= dev

.PHONY: run test modules chaos unit stack-up stack-down vet lint bench soak image

## run: start the local stack and the whole service in the foreground (Ctrl-C stops it)
run:
	scripts/run

# Test binaries link without DWARF, which no test reads: a third less time in
# the linker, which make test runs over a hundred times. The flags of go env
# (its file included) are kept.
test modules chaos: export GOFLAGS := $(strip $(shell $(GO) env GOFLAGS) -ldflags=-w)

TEST_ENV := ORDERFLOW_STACK_ENV=$(STACK)/env ORDERFLOW_REQUIRE_STACK=1 ORDERFLOW_CHAOS_SUMMARY=$(STACK)/chaos-summary.txt

## test: the cluster profile's Temporal server starts building (a cold build is
## the longest step; the cluster lane waits for it); vet and lint while the local
## stack (dev profile) starts and Schemathesis runs against its API, stopping
## there if one fails; then, side by side, each part on a stack of its own (scripts/lane):
##  - on the dev stack: every Go test with the race detector (stack tests
##    required), then the fault suite's rows that share the stack, four at a
##    time (beside the Go tests they would time out on its Temporal dev server),
##    then the shadow gate over the runs they left (scripts/shadow-gate);
##  - the tests of the other modules (make modules);
##  - the faults lane: the rows that restart the stack's servers or measure a
##    flood, one at a time, on a second dev stack;
##  - the cluster lane: the cluster profile, built, then the fleet test, the
##    flood, the failover to a replica, the restores (orders, refunds) and the
##    search for a tenant's orders;
## then, with the machine to itself, the rows that time another tenant's
## orders during a flood and split the provider's budget ($(ALONE)). Ends with
## the fault ledger, the slowest
## steps and tests, and a line `tests: N passed, N failed, N skipped`.
test:
	@mkdir -p $(STACK); rm -f $(STACK)/steps.tsv $(STACK)/chaos-summary.txt
	@scripts/timed "cluster server build (from the start)" scripts/stack build server >$(STACK)/build-server.log 2>&1 &
	@scripts/timed vet $(MAKE) --no-print-directory vet >$(STACK)/vet.log 2>&1 & vet=$$!; \
	  scripts/timed lint scripts/lint >$(STACK)/lint.log 2>&1 & lint=$$!; \
	  ORDERFLOW_STACK_PROFILE=dev scripts/timed "stack up (dev)" scripts/stack up; up=$$?; \
	  if [ $$up -eq 0 ]; then scripts/timed schemathesis scripts/schemathesis; up=$$?; fi; \
	  wait $$vet; v=$$?; wait $$lint; l=$$?; grep '^\[lint\]' $(STACK)/lint.log; \
	  if [ $$v -ne 0 ]; then cat $(STACK)/vet.log; echo "make vet failed (above)" >&2; exit 1; fi; \
	  if [ $$l -ne 0 ]; then cat $(STACK)/lint.log; echo "make lint failed (above)" >&2; exit 1; fi; exit $$up
	{ $(LANE_ENV) scripts/lane cluster >$(STACK)/lane-cluster.log 2>&1 & cl=$$!; \
	  $(LANE_ENV) scripts/lane faults -skip '$(ALONE)' >$(STACK)/lane-faults.log 2>&1 & fl=$$!; \
	  scripts/timed "other modules" $(MAKE) --no-print-directory -k modules >$(STACK)/modules.log 2>&1 & om=$$!; \
	  $(TEST_ENV) scripts/timed "go tests (race, dev stack)" $(GO) test -tags stack -race -p 4 -count=1 -v -timeout 40m $$($(GO) list ./... | grep -v '/deploy/'); a=$$?; \
	  $(TEST_ENV) scripts/timed "fault suite: shared rows (dev stack)" $(GO) test -tags chaos -p 1 -parallel 4 -count=1 -v -timeout 30m \
	    -run "$$(scripts/chaos-rows parallel)" ./chaos/; b=$$?; \
	  ORDERFLOW_STACK_DIR=$(STACK) scripts/timed "shadow gate over the dev stack's runs" scripts/shadow-gate; d=$$?; \
	  wait $$om; e=$$?; cat $(STACK)/modules.log; \
	  wait $$fl; f=$$?; cat $(STACK)/lane-faults.log; \
	  wait $$cl; c=$$?; cat $(STACK)/lane-cluster.log; \
	  $(TEST_ENV) ORDERFLOW_CHAOS_LANE=alone scripts/timed "fault suite: the floods that time another tenant, the budget's split (dev stack, alone)" \
	    $(GO) test -tags chaos -count=1 -v -timeout 15m -run '$(ALONE)' ./chaos/; g=$$?; \
	  exit $$((a | b | c | d | e | f | g)); } 2>&1 | tee $(STACK)/test.log | scripts/test-summary | tee $(STACK)/test-console.log; st=$$?; \
	  echo "fault suite ledger:"; cat $(STACK)/chaos-summary.txt; scripts/timed --report; tail -1 $(STACK)/test-console.log; exit $$st

# ALONE is the row that times another tenant's orders while one tenant's flood
# keeps two cores busy (beside the other lanes it would time them too), the row
# that times another tenant's 3-D Secure reads while one tenant polls its own at
# 100 a second, and the row that splits the provider's budget between two
# tenants' backlogs: beside them, its workers' activities starve and the budget
# is never used whole.
ALONE := ^(TestChaosOneTenantsFloodNeverDelaysAnothers|TestChaosProviderBudgetHoldsAcrossTheFleet|TestChaosThreeDSPollingNeverSlowsAnotherTenant)$$

LANE_ENV := GO=$(GO) ORDERFLOW_CHAOS_SUMMARY=$(STACK)/chaos-summary.txt ORDERFLOW_STEPS=$(STACK)/steps.tsv

## modules: the tests outside the service's packages: the client's module, the
## DBOS baseline's and the kafka-go fork's (race detector on), deploy/'s
## manifests and alert rules (rendered in one goroutine; stack tests required),
## and the shipments example, a team's kind in its own module, on the stack
modules:
	cd client && $(GO) test -race -count=1 -v ./...
	cd bench/dbos && $(GO) test -race -count=1 -v ./...
	cd third_party/kafka-go && $(GO) test -race -count=1 -v ./...
	$(TEST_ENV) $(GO) test -tags stack -count=1 -v -timeout 10m ./deploy/...
	cd examples/shipments && $(TEST_ENV) $(GO) test -tags stack -race -count=1 -v -timeout 10m ./...

## chaos: only the fault suite
chaos: stack-up
	@rm -f $(STACK)/chaos-summary.txt
	$(TEST_ENV) $(GO) test -tags chaos -p 1 -parallel 4 -count=1 -v -timeout 30m ./chaos/ 2>&1 | scripts/test-summary
	@echo "fault suite ledger:"; cat $(STACK)/chaos-summary.txt

## unit: tests that need no stack (those that do are behind the build tag stack)
unit:
	$(GO) test -count=1 ./...
	cd client && $(GO) test -count=1 ./...
	cd bench/dbos && $(GO) test -count=1 ./...
	cd third_party/kafka-go && $(GO) test -count=1 ./...

## lint: shellcheck on scripts/, golangci-lint (.golangci.yml) on the module and
## client/, then govulncheck; tools pinned and cached in ~/.cache/orderflow
lint:
	scripts/lint

## vet: gofmt (but for the kafka-go fork, kept as upstream wrote it), go vet of
## every module, and the fork's check: exactly upstream plus its patch
vet:
	@test -z "$$(gofmt -l $$(find . -name '*.go' -not -path './third_party/*' -not -path './.stack/*') | tee /dev/stderr)" || { echo "gofmt needed" >&2; exit 1; }
	$(GO) vet -tags stack,chaos,fleet ./...
	cd client && $(GO) vet ./...
	cd bench/dbos && $(GO) vet ./...
	cd examples/shipments && $(GO) vet -tags stack ./...
	scripts/kafka-go-patch check
	@cd third_party/kafka-go && test -z "$$(gofmt -l $$(sed -n 's|^+++ b/\(.*\.go\)$$|\1|p' ../kafka-go.patch) | tee /dev/stderr)" || { echo "gofmt needed in the kafka-go patch" >&2; exit 1; }
	cd third_party/kafka-go && $(GO) vet ./...

stack-up:
	ORDERFLOW_STACK_PROFILE=$(PROFILE) scripts/stack up

stack-down:
	scripts/stack down

## image: the api, worker and paysim images, tagged and labelled with git describe
## (REGISTRY=ghcr.io/orderflow by default; push them with docker push)
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
REGISTRY ?= ghcr.io/orderflow
image:
	for t in api worker paysim; do \
	  docker build --target $$t --build-arg VERSION=$(VERSION) --build-arg REVISION=$$(git rev-parse HEAD) \
	    -t $(REGISTRY)/orderflow-$$t:$(VERSION) . || exit 1; \
	done
	@echo "images: $(REGISTRY)/orderflow-{api,worker,paysim}:$(VERSION)"

## bench: the load report (raw Temporal baselines, DBOS as a peer, and orderflow, one
## run); N=500 C=16 by default;
## ROWS: the rows scenario 10 adds to each grown table (10 million: the scenario takes
## about 30 minutes and 21 GB of disk); ONLY=1,5: those scenarios; PROFILE=cluster measures the cluster profile;
## OVERLOAD: how long scenario 13 offers each of 1x, 2x and 5x the capacity it finds
## (docs/capacity.md); scenario 14 runs orders on the api and worker of
## PERSONAL_BASE beside this build's. The run ends its open workflows and deletes
## its tenants' rows, and prints what it left behind (0 orders, 0 workflows)
N ?= 500
C ?= 16
ROWS ?= 10000000
ONLY ?=
OVERLOAD ?= 5m
# The last build before personal values were sealed: scenario 14 measures an
# order's CPU on its api and worker beside this build's. Built once per ref from a
# worktree outside the checkout (removed after: no second copy of the sources
# under .stack for the tests that read the tree); where the ref is not in the
# history (a tarball) or does not build, the bench says so and skips the scenario.
PERSONAL_BASE ?= 914bffc
bench: stack-up
	mkdir -p $(STACK)/bin
	$(GO) build -o $(STACK)/bin/ ./cmd/api ./cmd/worker ./cmd/paysim ./cmd/bench
	cd bench/dbos && $(GO) build -o $(STACK)/bin/dbosbench .
	if ! ref=$$(git rev-parse --verify --quiet '$(PERSONAL_BASE)^{commit}' 2>/dev/null); then \
	  rm -rf $(STACK)/bin-base; echo "bench: $(PERSONAL_BASE) is not in this checkout's history: scenario 14 is skipped"; \
	elif [ "$$(cat $(STACK)/bin-base/REVISION 2>/dev/null)" != "$$ref" ]; then \
	  rm -rf $(STACK)/bin-base; src=$$(mktemp -d); git worktree prune; \
	  { git worktree add --quiet --detach $$src/orderflow $$ref && \
	    (cd $$src/orderflow && $(GO) build -o $(STACK)/bin-base/ ./cmd/api ./cmd/worker) && echo $$ref > $(STACK)/bin-base/REVISION; } || \
	    { rm -rf $(STACK)/bin-base; echo "bench: $(PERSONAL_BASE) does not build: scenario 14 is skipped"; }; \
	  git worktree remove --force $$src/orderflow 2>/dev/null; rm -rf $$src; git worktree prune; \
	fi
	ORDERFLOW_STACK_ENV=$(STACK)/env $(STACK)/bin/bench -n $(N) -c $(C) -rows $(ROWS) -only '$(ONLY)' -overload $(OVERLOAD) \
	  -bin $(STACK)/bin -base $(STACK)/bin-base -out bench/results
	$(GO) test -tags stack -run '^$$' -bench . -benchmem ./ingress/...

## soak: load at 0.8x the capacity (found by a ramp) on both ingresses for DURATION
## (60m) while the worker is killed (SIGKILL) every 5 minutes, the API restarted
## every 7, Kafka stopped for 30 s every 15, and the sandbox answers 5 % of writes
## 500 and 2 % past the workers' timeout; then the ledger (keys = orders =
## workflows = charges), a reconcile audit, and the slope against time of RSS,
## goroutines, PostgreSQL connections and table bytes per order, sampled every
## minute. Not part of make test; it restarts the stack's Kafka.
DURATION ?= 60m
soak: stack-up
	mkdir -p $(STACK)/bin
	$(GO) build -o $(STACK)/bin/ ./cmd/api ./cmd/worker ./cmd/paysim ./cmd/bench
	ORDERFLOW_STACK_ENV=$(STACK)/env $(STACK)/bin/bench -soak $(DURATION) -bin $(STACK)/bin -out bench/results
