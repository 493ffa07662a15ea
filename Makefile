# Thin wrapper over CMake + ctest. The real build lives in CMakeLists.txt.
PREFIX ?= /usr/local
DESTDIR ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE ?= cmake

.PHONY: all deps build asan check demo bench fuzz interop install uninstall deb static clean \
	format format-check

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

# The binary, its man pages and the bash/zsh/fish completions; the build
# needs the runtime libraries' headers only (no test library).
install: build
	@sh tools/install_tree.sh install build $(PREFIX) $(DESTDIR)

# The closest to one static binary glibc allows (docs/building.md, "A static
# binary"): jansson, libyaml and libgcc linked in; needs glibc and, on first
# use, libcrypto, libidn2, libcurl (libsecret for the keychain).
static: deps
	@$(CMAKE) -S . -B build-static -DCMAKE_BUILD_TYPE=Release -DAS_TESTS=OFF -DAS_STATIC_DEPS=ON >/dev/null
	@$(CMAKE) --build build-static --target agentstack as_gen_docs -j $(JOBS)
	@echo "build-static/agentstack needs: $$(readelf -d build-static/agentstack | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"

uninstall:
	@sh tools/install_tree.sh uninstall $(PREFIX) $(DESTDIR)

# A Debian package (tools/mkdeb.sh) of a Release build without the tests:
# build-deb/agentstack_<version>_<arch>.deb
deb: deps
	@$(CMAKE) -S . -B build-deb -DCMAKE_BUILD_TYPE=Release -DAS_TESTS=OFF >/dev/null
	@$(CMAKE) --build build-deb --target agentstack as_gen_docs -j $(JOBS)
	@sh tools/mkdeb.sh build-deb build-deb

format:
	@sh tools/format.sh

format-check:
	@sh tools/format.sh --check

clean:
	rm -rf build build-asan build-fuzz build-deb build-install build-static
