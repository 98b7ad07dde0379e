# SPDX-License-Identifier: Apache-2.0
# tcmprof: two commands on a fresh machine, `make demo` and `make test`.
# Both install what is missing first (see `deps`).

GO        ?= go
BUILD     := build
BIN       := $(BUILD)/tcmprof
VERSION   := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/tcmprof/tcmprof/cmd.Version=$(VERSION)

# Debian packages the tests and the demo need.
# Each entry is what proves a package is there (a command, or an absolute
# path) and the package. The C++ runtime for the ARM test firmware is only a
# Recommends of the newlib package, so it is listed on its own.
DEB_CHECKS   := arm-none-eabi-gcc:gcc-arm-none-eabi \
                /usr/lib/arm-none-eabi/newlib/libc.a:libnewlib-arm-none-eabi \
                /usr/lib/arm-none-eabi/newlib/libstdc++.a:libstdc++-arm-none-eabi-newlib \
                qemu-system-arm:qemu-system-arm \
                llvm-symbolizer:llvm \
                dtc:device-tree-compiler \
                fdtget:device-tree-compiler \
                /usr/lib/python3/dist-packages/kconfiglib.py:python3-kconfiglib \
                gcc:gcc \
                python3:python3 \
                /usr/bin/time:time \
                socat:socat \
                tmux:tmux \
                gdb-multiarch:gdb-multiarch

.PHONY: all deps build test test-go test-c demo bench fuzz clean

all: build

# deps: installs the missing Debian packages with apt-get when root (waiting,
# and saying so, while another apt-get holds apt's lock: scripts/apt-install.sh);
# otherwise prints the exact command and stops.
deps:
	@missing=""; \
	for pair in $(DEB_CHECKS); do \
	  what=$${pair%%:*}; pkg=$${pair##*:}; \
	  case $$what in /*) [ -e $$what ] ;; *) command -v $$what >/dev/null 2>&1 ;; esac && continue; \
	  case " $$missing " in *" $$pkg "*) ;; *) missing="$$missing $$pkg" ;; esac; \
	done; \
	command -v $(GO) >/dev/null 2>&1 || { echo "deps: Go is missing: install Go 1.26 or newer (https://go.dev/dl/)"; exit 1; }; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "deps: installing$$missing"; \
	    ./scripts/apt-install.sh$$missing || exit 1; \
	  else \
	    echo "deps: missing Debian packages; run:"; \
	    echo "  sudo apt-get update && sudo apt-get install -y$$missing"; \
	    exit 1; \
	  fi; \
	fi

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) .

test: deps test-c test-go

# staticcheck is pinned in go.mod (the tool directive): `go tool` builds
# that version, so every machine checks with the same analyzers.
# The load test's package offers datagrams in real time for seconds on end:
# it runs on its own, after the rest, so that its sender and model echoes
# do not take the cores the QEMU tests run on (nor the other way round).
test-go:
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	$(GO) test -count=1 -timeout 25m $$($(GO) list ./... | grep -v '/loadtest$$')
	$(GO) test -count=1 -timeout 5m ./loadtest

test-c:
	$(MAKE) -C firmware-sampler test

demo: deps build
	./scripts/demo.sh

bench: deps build
	./bench/run.sh

# Fuzz targets run briefly in CI (as seed-corpus tests in `make test`);
# `make fuzz FUZZTIME=10m` runs each one for longer by hand.
FUZZTIME ?= 30s
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

clean:
	rm -rf $(BUILD)
