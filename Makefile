# comb: the set-up commands are `make install`, `make run` and `make test` (see README.md).
GO        ?= go
DATA_DIR  ?= ./comb-data
FUZZTIME  ?= 10s
BIN       ?= bin/comb
# `make install` copies the binary to $(DESTDIR)$(PREFIX)/bin: ~/.local/bin by default (on PATH in
# most distributions' ~/.profile; no root needed), PREFIX=/usr/local for every user.
PREFIX    ?= $(HOME)/.local
ADDR      ?=
# The git revision, its time and the dirty flag go into the binary (`comb version`, /health):
# stamped by the toolchain (-buildvcs=auto, even where GOFLAGS says false), and through the linker
# too, since the toolchain stamps nothing in a git worktree. Without git both stay empty.
BUILDVCS  ?= auto
VERSION_PKG := github.com/combmq/comb/version
GIT_REV   := $(shell git rev-parse HEAD 2>/dev/null)
GIT_TIME  := $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
GIT_DIRTY := $(shell test -n "$$(git status --porcelain 2>/dev/null)" && echo true || echo false)
LDFLAGS   ?= -X $(VERSION_PKG).revision=$(GIT_REV) -X $(VERSION_PKG).commitTime=$(GIT_TIME) -X $(VERSION_PKG).dirty=$(GIT_DIRTY)
GOBUILD_FLAGS = -buildvcs=$(BUILDVCS) -ldflags '$(LDFLAGS)'

.PHONY: build comb-bench install run test test-readme test-cluster-http test-ui screenshot bench fuzz crashtest powertest clustertest bench-all bench-compare vet lint

build:
	$(GO) build $(GOBUILD_FLAGS) -o $(BIN) ./cmd/comb

install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/comb

# bin/comb-bench: comb with the benchmark peers' drivers (`comb bench --driver redis|nats`,
# package bench/peers, build tag `peers`); the server binary links neither client (issue 26).
comb-bench:
	$(GO) build -tags peers $(GOBUILD_FLAGS) -o bin/comb-bench ./cmd/comb

# `make run ADDR=127.0.0.1:7000 DATA_DIR=/tmp/comb` chooses where it listens and stores; without
# ADDR, COMB_ADDR or HOST/PORT from the environment, else 0.0.0.0:6632. The shell execs the built
# binary (not `go run`, whose child outlives a kill of the wrapper), so make's pid is comb's
# parent and nothing else: Ctrl-C, or a SIGTERM make forwards, reaches comb and stops it cleanly.
run: build
	exec $(BIN) serve $(if $(ADDR),--addr $(ADDR)) --data-dir $(DATA_DIR)

test:
	$(GO) test -race -count=1 ./...
	$(GO) vet ./...

# Every ```sh block of README.md in order, in one shell, as a newcomer pastes them, on a fresh
# copy of this tree and its own HOME, data directories and ports (doctest/, build tag `readme`).
test-readme:
	$(GO) test -tags readme -count=1 -timeout 10m -run TestREADME -v ./doctest/

# Issue 15: httpapi's real-broker tests against a 3-node in-process cluster, through its leader
# and through a follower (COMB_TEST_TARGET, httpapi/cluster_e2e_test.go); about a minute each.
test-cluster-http:
	@status=0; for target in leader follower; do \
	  echo "COMB_TEST_TARGET=$$target go test -race ./httpapi/"; \
	  COMB_TEST_TARGET=$$target $(GO) test -race -count=1 ./httpapi/ || status=1; \
	done; exit $$status

vet:
	$(GO) vet ./...

# staticcheck and deadcode at pinned versions (go run through the module proxy): no report
# but the deliberate ones, each with its reason (//lint:ignore, .ci/deadcode-allow.txt).
lint:
	GO=$(GO) bash .ci/lint

# The dashboard in headless Chromium over a seeded broker (ui/browser_test.go, build tag
# `browser`). It fails, never skips, without a browser: .ci/run installs Debian's chromium;
# CHROME_PATH points it at another one.
test-ui:
	$(GO) test -tags browser -count=1 -timeout 5m -run TestDashboard ./ui/

# docs/dashboard.png: the overview of the browser test's seeded broker, for the README.
screenshot:
	UI_SCREENSHOT=$(CURDIR)/docs/dashboard.png $(GO) test -tags browser -count=1 -timeout 5m -run TestDashboardShowsEveryViewInChromium ./ui/

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Runs every fuzz target for $(FUZZTIME) each (go test allows one -fuzz target per run).
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/func //'); do \
	    echo "fuzz $$pkg $$f"; \
	    $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

# Kill -9 crash harness (build tag `crash`): CRASH_KILLS sets the number of kills.
crashtest:
	$(GO) test -tags crash -count=1 -timeout 30m -run Crash ./...

# Power-loss harness (issue 21, fsck/powertest/): the broker in-process on vfs.Mem, cut with
# Mem.PowerCut POWER_CUTS times (`make test` runs it with 3). POWER_SEED reruns one seed.
POWER_CUTS ?= 100
powertest:
	POWER_CUTS=$(POWER_CUTS) $(GO) test -count=1 -timeout 30m -run PowerLoss -v ./fsck/powertest/

# Fault harness of a 3-node replicated cluster (build tag `cluster`, replica/clustertest/):
# CLUSTER_FAULTS sets the number of kill -9 / SIGSTOP / restart / partition faults (default 50);
# the partitions need root and iptables (CLUSTER_PARTITIONS=0 leaves them out).
clustertest:
	$(GO) test -tags cluster -count=1 -timeout 60m -run Cluster ./replica/clustertest/

# Reproduces docs/benchmarks.md side by side with the peers (needs redis-server and nats-server;
# builds comb and, with -tags peers, the comb-bench that drives the peers).
bench-all:
	bash bench/run-all.sh

# Issue 14's shapes as same-round comparisons of this checkout against another comb binary:
# `make bench-compare BASELINE=/path/to/old/comb` (knobs: ROUNDS, SHAPES, BENCH_DURATION, ...
# in bench/compare.sh). One shape by hand: `comb bench compare --baseline OLD --workload push`.
bench-compare:
	bash bench/compare.sh
