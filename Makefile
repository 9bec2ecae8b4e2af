# snug: see README.md. `make setup` on a fresh machine, then `make test`.
CARGO ?= cargo
SNUG := target/release/snug

.PHONY: build setup demo test cases gate bench soak clean

build:
	$(CARGO) build --release

# Install what is missing, build, and run snug on a real command.
setup:
	scripts/install-deps
	$(MAKE) build
	$(MAKE) demo

demo: build
	$(SNUG) -- sh -c 'echo "hello from the sandbox: $$(uname -srm), uid $$(id -u), host $$(hostname)"; ls -A ~ | wc -l | sed "s/^/files in \$$HOME: /"'

# Unit and integration tests (real bwrap, as root and as an unprivileged user), release build,
# then the shared cases from real bug reports when ../shared is present.
test: build
	$(CARGO) test --release --workspace
	@if [ -x ../shared/cases/run ]; then SNUG=$(CURDIR)/$(SNUG) ../shared/cases/run; fi

cases: build
	SNUG=$(CURDIR)/$(SNUG) ../shared/cases/run

gate:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --release -- -D warnings
	$(MAKE) test

bench: build
	scripts/bench

soak: build
	scripts/soak

clean:
	$(CARGO) clean
