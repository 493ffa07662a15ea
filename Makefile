# Thin wrapper over CMake + ctest. The real build lives in CMakeLists.txt.
PREFIX ?= /usr/local
DESTDIR ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE ?= cmake

.PHONY: all deps build asan check demo bench fuzz interop install clean format format-check

all: build

deps:
	@sh tools/deps.sh

build: deps
	@$(CMAKE) -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
	@$(CMAKE) --build build -j $(JOBS)

asan:
	@sh tools/deps.sh --test
	@$(CMAKE) -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DAS_SANITIZE=ON -DAS_WERROR=ON >/dev/null
	@$(CMAKE) --build build-asan -j $(JOBS)

check: asan
	@JOBS=$(JOBS) sh tools/check.sh

demo: build
	@sh tools/demo.sh build/agentstack

bench: build
	@sh bench/run.sh build

interop: build
	@sh tests/interop/run.sh build/agentstack

fuzz: deps
	@sh tools/fuzz.sh

install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 build/agentstack $(DESTDIR)$(PREFIX)/bin/agentstack

format:
	@sh tools/format.sh

format-check:
	@sh tools/format.sh --check

clean:
	rm -rf build build-asan build-fuzz
