# orderflow: the two commands are `make run` and `make test`.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
GO    ?= go
STACK := $(CURDIR)/.stack

.PHONY: run test unit stack-up stack-down vet bench

## run: start the local stack and the whole service in the foreground (Ctrl-C stops it)
run:
	scripts/run

## test: start the local stack, then every test with the race detector; stack tests are required
test: stack-up vet
	ORDERFLOW_STACK_ENV=$(STACK)/env ORDERFLOW_REQUIRE_STACK=1 \
		$(GO) test -race -count=1 -v -timeout 45m ./... 2>&1 | tee $(STACK)/test.log | scripts/test-summary

## unit: tests that need no stack (the stack tests skip)
unit:
	ORDERFLOW_STACK_ENV=/nonexistent $(GO) test -count=1 ./...

vet:
	@test -z "$$(gofmt -l . | tee /dev/stderr)" || { echo "gofmt needed" >&2; exit 1; }
	$(GO) vet ./...

stack-up:
	scripts/stack up

stack-down:
	scripts/stack down
