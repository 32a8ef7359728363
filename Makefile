# lockkit: `make test` is what CI runs (.ci/run) and what the README tells you to run.
GO ?= go
PKGS = ./...
# Every module of the repository: the library, the examples (and demo), the
# benchmarks against peer libraries. Each has its own go.mod, so what the
# examples and benchmarks need never enters the library's requirements.
MODULES = . examples bench

.PHONY: test tree-check tidy-check vet fmt-check unit matrix bench demo proto

test: tree-check tidy-check fmt-check vet unit

# No build output in the repository: no tracked executable, no tracked file over 1 MiB.
tree-check:
	@bash .ci/check-tree

fmt-check:
	@out=$$(gofmt -l .); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# go.mod and go.sum of every module say exactly what it needs.
tidy-check:
	@for m in $(MODULES); do $(GO) -C $$m mod tidy -diff || { echo "go mod tidy needed in $$m"; exit 1; }; done

vet:
	@for m in $(MODULES); do echo "go vet ($$m)"; $(GO) -C $$m vet $(PKGS) || exit 1; done

unit:
	$(GO) test -race -count=1 -timeout 15m $(PKGS)
	$(GO) -C examples test -race -count=1 -timeout 10m $(PKGS)
	$(GO) -C bench test -count=1 -run . -timeout 5m $(PKGS)

# The version matrix: the core, fault and conformance suites once per
# server build in SERVERS (a folder per release holding its redis-server and
# redis-cli; by default the shared/servers beside the checkout), each first
# on PATH in turn (.ci/matrix; docs/deployment.md says which releases CI runs).
# Without SERVERS it says so and skips.
SERVERS ?= $(abspath $(CURDIR)/..)/shared/servers
MATRIX_FLAGS ?= -race
matrix:
	@GO="$(GO)" bash .ci/matrix "$(SERVERS)" $(MATRIX_FLAGS)

demo:
	$(GO) -C examples run ./demo

# Benchmarks against peer libraries (bench/ is its own module: peers never
# enter this go.mod). Writes bench/results/{raw.txt,RESULTS.md,chart.png}.
# Compare two runs with: benchstat old.txt bench/results/raw.txt
# Benchmarks whose libraries or variants take turns in one loop (S1Turns,
# core's FeatureCost) run a fixed number of rounds, ROUNDS, and are added to
# the same raw.txt. BenchmarkRedisInstructions counts redis-server's
# instructions per uncontended cycle under valgrind (callgrind), once per
# library, BenchmarkHerdInstructions and BenchmarkRoundRobinInstructions
# per served acquire of a herd and of processes taking turns; they are
# skipped where valgrind is not installed. BenchmarkHerd runs each herd
# for a fixed 3 s budget, three times (alone, cold keys alone, both).
BENCHTIME ?= 3s
ROUNDS ?= 200x
bench:
	cd bench && $(GO) test -run '^$$' -bench '^Benchmark[^RS]|^BenchmarkS[^1]' -benchtime $(BENCHTIME) -count 1 -timeout 60m . | tee results/raw.txt
	cd bench && $(GO) test -run '^$$' -bench '^BenchmarkS1Turns$$' -benchtime $(ROUNDS) -count 1 -timeout 10m . | grep '^Benchmark' | tee -a results/raw.txt
	cd bench && $(GO) test -run '^$$' -bench '^BenchmarkRedisInstructions$$|^BenchmarkRoundRobinInstructions$$' -benchtime 1x -count 1 -timeout 10m . | grep '^Benchmark' | tee -a results/raw.txt
	$(GO) test -run '^$$' -bench '^BenchmarkFeatureCost$$' -benchtime $(ROUNDS) -count 1 -timeout 10m ./core | grep '^Benchmark' | tee -a bench/results/raw.txt
	cd bench && $(GO) run ./cmd/report -in results/raw.txt -md results/RESULTS.md -png results/chart.png \
		-note "Run $$(date -u +%Y-%m-%d) on $$(nproc) cores ($$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), Redis $$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p'), $$($(GO) version | cut -d' ' -f3), -benchtime $(BENCHTIME); one redis-server on loopback for all libraries."

# Regenerate the checked-in protobuf code (needs protoc: apt-get install -y
# protobuf-compiler; go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
# and go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2). CI does not need it.
proto:
	PATH="$$($(GO) env GOPATH)/bin:$$PATH" $(GO) generate ./grpclock/internal/testpb
	PATH="$$($(GO) env GOPATH)/bin:$$PATH" $(GO) -C examples generate ./grpc/ordersv1
