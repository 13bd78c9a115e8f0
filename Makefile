# fourcorner — the two commands: `make serve` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: serve test lint typecheck layers browser dnsmasq install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): pyproject.toml setup.py | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

# The `as4` package (an independent AS4 implementation the interop tests run against) pins
# cryptography below our minimum; its code runs on the current one, so it is installed on its
# own, without its pins.
$(TEST_STAMP): pyproject.toml setup.py | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	$(BIN)/pip install --quiet --no-deps as4==0.2.0
	$(BIN)/pip install --quiet "pydantic>=2.11" "urllib3>=2.5"
	touch $@ $(STAMP)

install: $(STAMP)

serve: $(STAMP)
	$(BIN)/fourcorner serve

lint: $(TEST_STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

# mypy finds modules by folder; the link gives src/ the package's name, fourcorner.
typecheck: $(TEST_STAMP)
	@mkdir -p .build/typecheck && ln -sfn ../../src .build/typecheck/fourcorner
	$(BIN)/mypy

layers: $(TEST_STAMP)
	$(BIN)/lint-imports

# Debian's chromium, for the test that renders /docs in a headless browser (as root, from apt).
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  && { apt-get install -y -qq chromium >/dev/null 2>&1 \
	       || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }; }; } \
	  || echo "chromium is not installed: the /docs browser test skips (and fails under CI=true)"

# Debian's dnsmasq, the DNS server the discovery tests start on 127.0.0.1 (as root, from apt;
# dnsmasq-base is the program without the system service that would take port 53).
dnsmasq:
	@command -v dnsmasq >/dev/null 2>&1 || [ -x /usr/sbin/dnsmasq ] || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  && { apt-get install -y -qq dnsmasq-base >/dev/null 2>&1 \
	       || { apt-get update -qq && apt-get install -y -qq dnsmasq-base >/dev/null; }; }; } \
	  || echo "dnsmasq is not installed: the discovery tests skip (and fail under CI=true)"

test: lint typecheck layers browser dnsmasq
	$(BIN)/pytest -q -p no:cacheprovider

clean:
	rm -rf $(VENV) .build .pytest_cache .mypy_cache .ruff_cache
