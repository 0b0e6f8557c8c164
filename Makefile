# comb: the two set-up commands are `make run` and `make test` (see README.md).
GO        ?= go
DATA_DIR  ?= ./comb-data
FUZZTIME  ?= 10s
BIN       ?= bin/comb

.PHONY: build run test test-ui screenshot bench fuzz crashtest bench-all bench-compare vet

build:
	$(GO) build -o $(BIN) ./cmd/comb

run:
	$(GO) run ./cmd/comb serve --data-dir $(DATA_DIR)

test:
	$(GO) test -race -count=1 ./...
	$(GO) vet ./...

vet:
	$(GO) vet ./...

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

# Reproduces docs/benchmarks.md side by side with the peers (needs redis-server and nats-server).
bench-all:
	bash bench/run-all.sh

# Issue 14's shapes as same-round comparisons of this checkout against another comb binary:
# `make bench-compare BASELINE=/path/to/old/comb` (knobs: ROUNDS, SHAPES, BENCH_DURATION, ...
# in bench/compare.sh). One shape by hand: `comb bench compare --baseline OLD --workload push`.
bench-compare:
	bash bench/compare.sh
