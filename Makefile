# fifoworker — every target works on a fresh machine: tools are installed at
# pinned versions into a cache outside the repository and reused afterwards.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

CACHE ?= $(or $(FIFOWORKER_CACHE),$(HOME)/.cache/fifoworker)
BIN   := $(CACHE)/bin

GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT         := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
BENCHSTAT_VERSION     := v0.0.0-20260908200009-22c9c6c9d4da
BENCHSTAT             := $(BIN)/benchstat-$(BENCHSTAT_VERSION)

GO_TEST_FLAGS ?= -race -count=1
BENCH_COUNT   ?= 6

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort

.PHONY: demo
demo: ## run the whole pipeline on sample jobs on the local AWS stack (RIE=1: built bootstraps under the runtime interface emulator; TRANSPORT=kafka: template-kafka.yaml on the stack's Kafka broker; STORE=postgres: template-postgres.yaml on the stack's PostgreSQL)
	go run ./cmd/fifoworker demo $(if $(filter 1,$(RIE)),--rie) --transport $(TRANSPORT) --store $(STORE)

.PHONY: serve
serve: ## the jobs API on http://127.0.0.1:8080 with the five functions and their mappings on a fresh local stack; prints tokens; Ctrl-C stops it all
	go run ./cmd/fifoworker local serve

# The five functions' bootstraps, built as `sam build` builds them for
# template.yaml (provided.al2023, arm64) with GOFLAGS carrying the flags
# (internal/dev/pipeline.BuildFlags: nethttpomithttp2 leaves net/http's
# HTTP/2 out, 0.33 to 0.46 MB of each; the SDK's clients without inlining,
# 0.39 to 0.46 MB more of most; docs/BENCHMARKS.md);
# TRANSPORT=kafka builds template-kafka.yaml's, with the kafka tag (each
# variant's bootstrap carries its transport only: docs/KAFKA.md), into
# .aws-sam-go/kafka/. STORE=postgres builds template-postgres.yaml's, with
# the postgres tag (each function's PostgreSQL wiring, and the schema's
# migrate function), into .aws-sam-go/postgres/ (.aws-sam-go/kafka-postgres/
# with TRANSPORT=kafka).
FUNCTIONS := intake relay worker projector sweeper
TRANSPORT ?= sqs
STORE ?= dynamodb
comma := ,
BOOTSTRAP_FUNCTIONS := $(FUNCTIONS)$(if $(filter postgres,$(STORE)), migrate)
# pipeline.StoreTags: with postgres, the postgres tag.
BOOTSTRAP_TAGS := lambda.norpc,nethttpomithttp2$(if $(filter kafka,$(TRANSPORT)),$(comma)kafka)$(if $(filter postgres,$(STORE)),$(comma)postgres)
BOOTSTRAP_DIR  := .aws-sam-go$(if $(filter-out sqs-dynamodb,$(TRANSPORT)-$(STORE)),/$(subst sqs-,,$(subst -dynamodb,,$(TRANSPORT)-$(STORE))))
# The AWS SDK's service clients, and on Kafka franz-go's kgo, without
# inlining, for the bootstraps' size (pipeline.BuildFlags, KafkaGCFlags).
BOOTSTRAP_GCFLAGS := -gcflags=github.com/aws/aws-sdk-go-v2/service/...=-l$(if $(filter kafka,$(TRANSPORT)), -gcflags=github.com/twmb/franz-go/pkg/kgo=-l)
.PHONY: bootstraps
bootstraps: ## build each function's bootstrap into .aws-sam-go/<name>/bootstrap (TRANSPORT=kafka: .aws-sam-go/kafka/<name>/, with the kafka tag; STORE=postgres: .aws-sam-go/postgres/<name>/, with the postgres tag, migrate included; linux/arm64, stripped) and list their sizes against the 10 MB goal
	@case "$(TRANSPORT)" in sqs|kafka) ;; *) echo "TRANSPORT is sqs or kafka, not $(TRANSPORT)" >&2; exit 2;; esac
	@case "$(STORE)" in dynamodb|postgres) ;; *) echo "STORE is dynamodb or postgres, not $(STORE)" >&2; exit 2;; esac
	@for f in $(BOOTSTRAP_FUNCTIONS); do \
		CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -tags $(BOOTSTRAP_TAGS) -ldflags=-s -trimpath $(BOOTSTRAP_GCFLAGS) -o $(BOOTSTRAP_DIR)/$$f/bootstrap ./functions/$$f || exit 1; \
	done
	@ls -l $(BOOTSTRAP_DIR)/*/bootstrap | awk '{printf "%-38s %6.2f MB%s\n", $$9, $$5/1e6, ($$5 > 10e6 ? "  over the 10 MB goal" : "")}'

.PHONY: test
test: lint integration ## every test: lint, unit, conformance, integration, template checks

# The tests of the import rules (internal/dev/layers) run the pinned
# golangci-lint: the test targets install it and name it to them.
LINT_FOR_TESTS := FIFOWORKER_GOLANGCI_LINT=$(abspath $(GOLANGCI_LINT))

.PHONY: unit
unit: $(GOLANGCI_LINT) ## fast tests only (no local stack), with the race detector
	$(LINT_FOR_TESTS) go test $(GO_TEST_FLAGS) ./...

# Every test, the integration ones included, on a fresh stack of its own that
# is stopped afterwards whatever happens. If the stack cannot start, nothing
# runs and the target fails with the reason.
# The browser tests write their screenshots under ARTEFACTS, which CI keeps
# (.gitignore leaves it out of the repository).
ARTEFACTS ?= $(CURDIR)/.artefacts
.PHONY: integration
integration: bin/fifoworker $(GOLANGCI_LINT) chromium ## all tests on a fresh local stack (started and stopped here); screenshots of the browser tests in .artefacts/
	$(LINT_FOR_TESTS) FIFOWORKER_ARTEFACTS=$(ARTEFACTS) bin/fifoworker local run --name test-$$$$ -- go test $(GO_TEST_FLAGS) -tags integration ./...

# Headless Chromium for the console's browser tests: Debian's chromium,
# installed with apt-get when missing (as root, as CI runs), never pinned:
# it follows Chromium's security updates. Without it, or root and apt-get
# to install it, the target fails saying which is missing.
.PHONY: chromium
chromium: ## Debian's chromium for the browser tests, installed with apt-get when missing (needs root then; FIFOWORKER_CHROMIUM names another)
	bash internal/dev/browser/install-chromium

.PHONY: local-up local-down local-status local-deploy
local-up: bin/fifoworker ## start the dev stack; eval "$$(bin/fifoworker local up)" to use it
	bin/fifoworker local up
local-down: bin/fifoworker ## stop the dev stack
	bin/fifoworker local down
local-status: bin/fifoworker ## show the dev stack
	bin/fifoworker local status
local-deploy: bin/fifoworker ## create template.yaml's resources on the dev stack
	bin/fifoworker local deploy

.PHONY: bin/fifoworker
bin/fifoworker:
	go build -o $@ ./cmd/fifoworker

.PHONY: lint
lint: $(GOLANGCI_LINT) ## golangci-lint at the pinned version
	$(GOLANGCI_LINT) run --build-tags integration ./...

# make soak: the simulation of the pipeline (internal/sim) on many seeds,
# each on TRANSPORT: sqs, kafka, or both (each seed on SQS, then on
# Kafka). TRANSPORT defaults to both here, whatever its default for demo
# and bootstraps; given on the command line or in the environment, it is
# taken. SOAK_SEEDS seeds from SOAK_FIRST, or as many as SOAK_TIME (10m,
# 2h) allows when it is set, on every CPU. The default seed counts take
# about as long as 100,000 seeds on SQS, the soak before Kafka: a seed
# costs about 1.4 times as much on Kafka as on SQS, and twice as much on
# both (docs/TESTING.md, "Speed"), so 100,000 on SQS, 70,000 on Kafka,
# 50,000 on both. It prints seeds/s; a failure prints its seed and the
# one-line command that replays it with its trace.
# STORE=postgres runs the jobs, the projection and the quarantine on the
# PostgreSQL stores, a new database per run on the server
# FIFOWORKER_POSTGRES_DSN names (local up's): a run costs 10 to 30 times a
# memory run (measured on 2 cores at load 17: 2.2 to 2.7 s a run, its
# database's creation included, against 0.08 to 0.25 s), so the default
# seed counts are a twenty-fifth of the memory ones. RELAY=outbox (with
# STORE=postgres) has the relay drain job_outbox through pgsource instead
# of publishing the journal's stream.
SOAK_TRANSPORT := $(if $(filter command line environment environment override,$(origin TRANSPORT)),$(TRANSPORT),both)
SOAK_STORE     := $(if $(filter command line environment environment override,$(origin STORE)),$(STORE),memory)
soak_seeds_sqs   := 100000
soak_seeds_kafka := 70000
soak_seeds_both  := 50000
SOAK_SEEDS ?= $(if $(filter postgres,$(SOAK_STORE)),$(shell echo $$(( $(soak_seeds_$(SOAK_TRANSPORT)) / 25 ))),$(soak_seeds_$(SOAK_TRANSPORT)))
SOAK_FIRST ?= 1
SOAK_TIME  ?=
.PHONY: soak
soak: ## the pipeline simulation on many seeds: TRANSPORT=both (default here), sqs or kafka; STORE=memory (default here) or postgres (FIFOWORKER_POSTGRES_DSN's server, a twenty-fifth of the seeds; RELAY=outbox: pgsource's relay); SOAK_SEEDS from SOAK_FIRST=1 (50000 on both, 100000 on sqs, 70000 on kafka: about the same time), or SOAK_TIME=10m; prints seeds/s, and a failing seed with the command that replays it
	@case "$(SOAK_TRANSPORT)" in sqs|kafka|both) ;; *) echo "TRANSPORT is sqs, kafka or both, not $(SOAK_TRANSPORT)" >&2; exit 2;; esac
	@case "$(SOAK_STORE)" in memory|postgres) ;; *) echo "STORE is memory or postgres, not $(SOAK_STORE)" >&2; exit 2;; esac
	go test -count=1 -timeout 0 -v -run '^TestSimulation$$' ./internal/sim \
		-args -first $(SOAK_FIRST) $(if $(SOAK_TIME),-soak-time $(SOAK_TIME),-seeds $(SOAK_SEEDS)) $(if $(filter-out both,$(SOAK_TRANSPORT)),-transport $(SOAK_TRANSPORT)) -store $(SOAK_STORE) $(if $(filter outbox,$(RELAY)),-outbox-relay) \
		| grep -vE '^=== (RUN|CONT|PAUSE)|^    --- PASS: TestSimulation/'

# make bench: pkg/fifo's and pkg/kafka's benchmarks, then the local stack's, each round on a
# fresh stack of its own (started and stopped here, as make integration's
# is): DynamoDB Local slows down as a stack ages (tables created and
# deleted, its heap), which would weigh on later rounds. Raw results go to
# bench/, and benchstat summarises them. Only make bench runs benchmarks:
# make test compiles test/'s and runs none.
.PHONY: bench
bench: $(BENCHSTAT) bin/fifoworker ## benchmarks: pkg/fifo, pkg/kafka; then on fresh local stacks jobs/s end to end and ordering cost with 1, 10, 100 groups (CPU per process, a profile), requests per job per path, cold starts. Raw results in bench/
	mkdir -p bench
	go test -run '^$$' -bench . -count $(BENCH_COUNT) ./pkg/fifo | tee bench/fifo.txt
	$(BENCHSTAT) bench/fifo.txt
	go test -run '^$$' -bench . -count $(BENCH_COUNT) ./pkg/kafka | tee bench/kafka.txt
	$(BENCHSTAT) bench/kafka.txt
	: > bench/stack.txt
	for i in $$(seq $(BENCH_ROUNDS)); do \
		bin/fifoworker local run --name bench-$$$$-$$i -- $(MAKE) --no-print-directory bench-round; \
	done
	$(BENCHSTAT) -col /groups bench/stack.txt | tee bench/stack-summary.txt
	bin/fifoworker local run --name bench-$$$$ -- $(MAKE) --no-print-directory bench-stack

# The benchmarks of the local stack run in rounds, each round every
# configuration once (groups=1, 10, 100 side by side), so that the
# machine's load, which others share, weighs on each alike; benchstat then
# compares the groups as columns. Every figure carries the 1-minute load
# average (load1) when it was taken.
BENCH_ROUNDS        ?= 6
BENCH_PIPELINE_TIME ?= 5s
BENCH_ORDERING_TIME ?= 3s
BENCH_GO_TEST       := go test -tags integration -count=1

.PHONY: bench-round
bench-round: ## one round of the local stack's benchmarks, appended to bench/stack.txt, on the stack the environment names (make bench starts one per round)
	mkdir -p bench
	@echo "# round on stack $$FIFOWORKER_STACK, load $$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a bench/stack.txt
	$(BENCH_GO_TEST) -run '^$$' -bench '^BenchmarkPipeline$$' -benchtime $(BENCH_PIPELINE_TIME) ./test/ | tee -a bench/stack.txt
	$(BENCH_GO_TEST) -run '^$$' -bench '^BenchmarkOrdering$$' -benchtime $(BENCH_ORDERING_TIME) ./test/ | tee -a bench/stack.txt

# make bench-totals: the tenant totals' design before sharding against the
# sharded one, side by side (BenchmarkTotalsDesigns: 2,000 jobs of one
# tenant, 100 groups, the totals checked exactly), in TOTALS_ROUNDS rounds
# that alternate the order (before then sharded, then sharded then
# before), each design on a fresh stack of its own: DynamoDB Local slows
# as a stack ages, which would weigh on whichever design ran second. About
# 10 minutes on the 2-core machine; make test runs none of it. Raw results
# in bench/totals.txt, one column per design in bench/totals-summary.txt;
# docs/BENCHMARKS.md, "Sharded totals under load", reads them.
TOTALS_ROUNDS ?= 4
.PHONY: bench-totals
bench-totals: $(BENCHSTAT) bin/fifoworker ## the tenant totals before sharding against sharded, side by side: 2,000 jobs of one tenant in 100 groups each, totals checked exactly; jobs/s and the projector's transactions per job. Raw results in bench/totals.txt
	mkdir -p bench
	@echo "# bench-totals on $$(nproc) CPUs, $(TOTALS_ROUNDS) rounds, $$(date -u +%FT%TZ)" | tee bench/totals.txt
	for i in $$(seq $(TOTALS_ROUNDS)); do \
		order="before sharded"; if [ $$((i % 2)) = 0 ]; then order="sharded before"; fi; \
		for d in $$order; do \
			echo "# round $$i, design $$d, load $$(cut -d' ' -f1-3 /proc/loadavg) at the start, $$(date -u +%FT%TZ)" | tee -a bench/totals.txt; \
			bin/fifoworker local run --name load-totals-$$$$-$$i-$$d -- $(BENCH_GO_TEST) -run '^$$' \
				-bench "^BenchmarkTotalsDesigns\$$/^design=$$d\$$" -benchtime 1x -timeout 0 ./test/ | tee -a bench/totals.txt; \
		done; \
	done
	@echo "# load $$(cut -d' ' -f1-3 /proc/loadavg) at the end, $$(date -u +%FT%TZ)" | tee -a bench/totals.txt
	$(BENCHSTAT) -col /design bench/totals.txt | tee bench/totals-summary.txt

# make bench-console: the operator's console's pages through HTTP
# (BenchmarkConsolePages: 2,000 jobs written through jobs.DynamoStore, a
# held group; the overview, the jobs list, a job, a queue's held groups and
# one held group), each page CONSOLE_BENCH_TIME times in each of the
# benchmark's rounds, the pages in turn, on a fresh stack of its own. The
# goal is under 100 ms a page. make test runs none of it. Raw results in
# bench/console.txt (the command first), each page's median over the
# rounds in bench/console-summary.txt.
CONSOLE_BENCH_TIME ?= 20x
CONSOLE_BENCH := $(BENCH_GO_TEST) -run '^$$' -bench '^BenchmarkConsolePages$$' -benchtime $(CONSOLE_BENCH_TIME) -timeout 0 ./test/
.PHONY: bench-console
bench-console: $(BENCHSTAT) bin/fifoworker ## the console's pages through HTTP with 2,000 jobs on a fresh local stack (goal: under 100 ms a page); raw results in bench/console.txt, medians in bench/console-summary.txt
	mkdir -p bench
	@echo "# bench-console on $$(nproc) CPUs, load $$(cut -d' ' -f1-3 /proc/loadavg) at the start, $$(date -u +%FT%TZ)" | tee bench/console.txt
	@echo "# bin/fifoworker local run --name bench-console-PID -- $(CONSOLE_BENCH)" | tee -a bench/console.txt
	bin/fifoworker local run --name bench-console-$$$$ -- $(CONSOLE_BENCH) | tee -a bench/console.txt
	@echo "# load $$(cut -d' ' -f1-3 /proc/loadavg) at the end" | tee -a bench/console.txt
	$(BENCHSTAT) -ignore /round bench/console.txt | tee bench/console-summary.txt

.PHONY: bench-stack
bench-stack: ## the rest of make bench, on the stack the environment names: a CPU profile of groups=100 end to end, requests per job per path, cold starts
	mkdir -p bench
	@echo "# where the time goes: groups=100 end to end under the CPU profiler"
	$(BENCH_GO_TEST) -run '^$$' -bench '^BenchmarkPipeline$$/^groups=100$$' -benchtime 200x \
		-cpuprofile bench/pipeline.cpu -o bench/.stack.test ./test/ | tee bench/pipeline-profiled.txt
	rm -f bench/.stack.test
	go tool pprof -top -nodecount=30 bench/pipeline.cpu 2>/dev/null | tee bench/pipeline-profile.txt
	go tool pprof -top -unit=ms -nodefraction=0 -nodecount=1000000 bench/pipeline.cpu 2>/dev/null \
		| awk -f bench/profile-by-package.awk | tee -a bench/pipeline-profile.txt
	@echo "# requests per job on each path, counted by SDK middleware"
	$(BENCH_GO_TEST) -run '^TestRequestsPerJob' -v ./test/ | grep -E 'requests path=|^(--- |ok|FAIL)' | tee bench/requests.txt
	@echo "# cold start per function of each transport: bootstrap size and init under the RIE"
	$(BENCH_GO_TEST) -run '^(TestEachFunctionAnswersItsSampleUnderTheRIE|TestEachKafkaFunctionStartsUnderTheRIE|TestEach(Kafka)?PostgresFunctionAnswersItsSampleUnderTheRIE)$$' -parallel 1 -v ./test/ | grep -E 'bootstrap|^(--- |ok|FAIL)' | tee bench/coldstart.txt

# make bench-memory: each function's latency per invocation, init and
# peak resident memory under the CPU share Lambda gives 128, 256 and 512 MB
# (a cgroup's CPU quota: internal/dev/cpuquota) and with no quota, in
# rounds, each on a fresh stack of its own (DynamoDB Local slows down as a
# stack ages: make bench's reason) and each quota on a deployment of its
# own; docs/BENCHMARKS.md, "Memory sizes", chooses each
# function's MemorySize from them. It needs root and a cgroup cpu
# controller, and fails saying which is missing. make test runs none of it.
# Raw results in bench/memory.txt, one column per quota in
# bench/memory-summary.txt.
MEMORY_BENCH_TIME  ?= 20x
# BenchmarkMemorySize's memoryRounds: one stack each.
MEMORY_BENCH_ROUNDS = 3
.PHONY: bench-memory
bench-memory: $(BENCHSTAT) bin/fifoworker ## each function under the CPU share of 128, 256, 512 MB and none (root, cgroup): latency per invocation p50/p90/max, init, peak RSS; raw results in bench/memory.txt
	@[ "$$(id -u)" = 0 ] || { echo "bench-memory runs each bootstrap in a cgroup with a CPU quota: it needs root" >&2; exit 1; }
	mkdir -p bench
	@echo "# bench-memory on $$(nproc) CPUs, load $$(cut -d' ' -f1-3 /proc/loadavg) at the start, $$(date -u +%FT%TZ)" | tee bench/memory.txt
	for i in $$(seq $(MEMORY_BENCH_ROUNDS)); do \
		bin/fifoworker local run --name bench-memory-$$$$-$$i -- go test -tags integration -run '^$$' -bench "^BenchmarkMemorySize\$$/^round=$$i\$$" \
			-benchtime $(MEMORY_BENCH_TIME) -count 1 -timeout 0 ./test/ | tee -a bench/memory.txt; \
	done
	@echo "# load $$(cut -d' ' -f1-3 /proc/loadavg) at the end" | tee -a bench/memory.txt
	$(BENCHSTAT) -col /mb -ignore /round bench/memory.txt | tee bench/memory-summary.txt

.PHONY: tools
tools: $(GOLANGCI_LINT) $(BENCHSTAT) ## install the pinned tools into the cache

# Install into a scratch directory and rename, so that an interrupted build
# never leaves a half-written tool behind under its final name.
$(GOLANGCI_LINT):
	mkdir -p $(BIN)/.install
	GOBIN=$(BIN)/.install go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/.install/golangci-lint $@

$(BENCHSTAT):
	mkdir -p $(BIN)/.install
	GOBIN=$(BIN)/.install go install golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION)
	mv $(BIN)/.install/benchstat $@
