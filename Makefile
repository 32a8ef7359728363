# lockkit: `make test` is what CI runs (.ci/run) and what the README tells you to run.
GO ?= go
PKGS = ./...

.PHONY: test vet fmt-check unit bench demo

test: fmt-check vet unit

fmt-check:
	@out=$$(gofmt -l .); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

unit:
	$(GO) test -race -count=1 -timeout 15m $(PKGS)

demo:
	$(GO) run ./examples/demo
