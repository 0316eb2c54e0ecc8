# The two set-up commands of the README: `make dev` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: dev test lint typecheck install wheel

$(BIN)/weir: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(BIN)/weir

install: $(BIN)/weir

# Weir on 127.0.0.1:8288 (embedded SQLite under .weir/) plus the example app on :8000.
dev: install
	$(BIN)/python -m weir dev --example

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	bash .ci/lint-imports  # $(BIN)/lint-imports on a wheel-shaped view of the tree

typecheck: install
	bash .ci/typecheck

# The wheel `pip install` takes, in dist/ (build/ is cleared: it would carry deleted modules).
wheel: install
	rm -rf build
	$(BIN)/pip wheel -q --no-deps -w dist .

# The whole suite: lint, types, the wheel (installed in a clean venv, the README's example run
# from it), unit, store, integration (both SDKs) and browser tests; the store and integration
# suites run on SQLite and on the PostgreSQL that .ci/postgres starts. That server is stopped
# at the end, pass or fail, unless KEEP_POSTGRES=1.
# pytest runs on TEST_WORKERS xdist workers (most tests wait on loopback HTTP and subprocesses,
# so more workers than cores pay off); tests sharing a started server stay on one worker
# (tests/conftest.py). Tests marked `serial` audit timing under load and run afterwards, alone.
# Both passes print their slowest tests.
TEST_WORKERS ?= 4
test: install
	bash .ci/system-deps
	$(MAKE) lint typecheck
	PY=$(PY) bash .ci/wheel
	bash .ci/postgres
	. ./.weir-ci/postgres.env && \
	  { $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup -m "not serial" --durations=25; \
	    status=$$?; $(BIN)/python -m pytest -m serial --durations=10 || status=$$?; }; \
	  [ -n "$(KEEP_POSTGRES)" ] || bash .ci/postgres stop; exit $$status
