# dpkit workbook. Two commands on a fresh machine:
#   make lab    create .venv if missing, install, open JupyterLab on the lessons
#   make test   create .venv if missing, install, lint, run unit tests and nbval over the notebooks
# Others: make test-browser (JupyterLab in headless Chromium, screenshots in runs/browser/),
#         make notebooks (re-execute lessons and solutions in place), make exercises,
#         make timings (seconds per notebook; fails if one takes over 60 s),
#         make test-under-load (make test with every core kept busy),
#         make test-grading (nbgrader autogrades every exercise, not only exercise 02),
#         make screenshots (lesson 06's TensorBoard pictures in lessons/images/),
#         make bench (towers vs MirroredStrategy, pinned worker processes, sweep time,
#         cluster up/down),
#         make clean.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PORT   ?= 8888

# Which TensorFlow build suits this machine (override: make test TF_BUILD=cpu).
ifeq ($(shell uname -s),Darwin)
  TF_BUILD ?= macos
else ifeq ($(shell nvidia-smi -L >/dev/null 2>&1 && echo yes),yes)
  TF_BUILD ?= cuda
else
  TF_BUILD ?= cpu
endif

# Quiet TensorFlow (C++ info logs off) and CPU maths that do not depend on oneDNN's
# blocking, so that runs reproduce. Kernels started by JupyterLab and nbval inherit these.
export TF_CPP_MIN_LOG_LEVEL   ?= 3
export TF_ENABLE_ONEDNN_OPTS  ?= 0
export PYDEVD_DISABLE_FILE_VALIDATION = 1

STAMP := $(VENV)/.dpkit-$(TF_BUILD)


.PHONY: lab test test-under-load test-grading test-browser env lint unit notebooks exercises timings bench clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "dpkit needs Python 3.10 or newer; run: make PYTHON=python3.11 ...")'
	@echo "dpkit: TensorFlow build for this machine: $(TF_BUILD)  (override with TF_BUILD=cpu|cuda|macos)"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[$(TF_BUILD),lab,test,grade]'
	@rm -f $(VENV)/.dpkit-* && touch $@

env: $(STAMP)

lab: $(STAMP)
	@echo "dpkit: JupyterLab on http://127.0.0.1:$(PORT) (localhost only, token required)"
	$(VENV)/bin/jupyter lab --ip=127.0.0.1 --port=$(PORT) --ServerApp.root_dir=. \
		$(if $(filter 0,$(shell id -u)),--allow-root) lessons/00_setup_and_devices.ipynb

lint: $(STAMP)
	$(VENV)/bin/ruff check dpkit tests browser_tests tools benchmarks lessons solutions exercises
	$(VENV)/bin/ruff format --check dpkit tests browser_tests tools benchmarks lessons solutions exercises

unit: $(STAMP)
	$(PY) -m pytest tests -p no:cacheprovider

# Unit tests, then nbval re-executes every lesson and solution in a fresh kernel and
# compares the cells marked NBVAL_CHECK_OUTPUT with their committed outputs.
# pytest-xdist runs TEST_WORKERS files at a time (--dist loadfile keeps each notebook's
# cells, and each test file, in one worker); the notebooks go first, they are the longest.
TEST_WORKERS ?= 2
test: $(STAMP)
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory lint && \
	$(PY) tools/make_exercises.py --check && \
	$(PY) -m pytest lessons solutions tests --nbval-lax --nbval-current-env \
		--nbval-cell-timeout=900 -p no:cacheprovider -v -n $(TEST_WORKERS) --dist loadfile \
		--durations=15; \
	code=$$?; echo "dpkit: make test took $$(( $$(date +%s) - start )) s (exit $$code)"; exit $$code

# The same suite while one busy loop per core keeps the machine busy (always stopped after).
test-under-load: $(STAMP)
	$(PY) tools/busy.py -- $(MAKE) --no-print-directory test

# nbgrader's real commands on every exercise (make test autogrades exercise 02 only).
test-grading: $(STAMP)
	DPKIT_GRADE_ALL=1 $(PY) -m pytest tests/test_grading.py -p no:cacheprovider -v

# The workbook in a real browser: JupyterLab driven in headless Chromium by Playwright.
# Chromium comes from the system's package manager (Playwright's own download needs the
# internet); it is installed here when missing and we may (root, or sudo without a password).
test-browser: $(STAMP)
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	      echo "dpkit: installing Chromium with apt-get"; \
	      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	    elif command -v apt-get >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
	      echo "dpkit: installing Chromium with sudo apt-get"; \
	      sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	    else echo "dpkit: Chromium is missing and cannot be installed here; the browser tests will skip"; fi; }
	$(PY) -m pip install --quiet -e '.[$(TF_BUILD),lab,test,grade,browser]'
	$(PY) -m pytest browser_tests -p no:cacheprovider -v -rs

# Lesson 06's pictures of TensorBoard (lessons/images/tensorboard_*.png): TensorBoard on
# the run lesson 06 makes, its Scalars and Histograms dashboards shot in headless Chromium.
# The same Chromium and Playwright as test-browser, running only browser_tests/test_screenshots.py.
.PHONY: screenshots
screenshots:
	DPKIT_UPDATE_SCREENSHOTS=1 PYTEST_ADDOPTS="-k screenshot" $(MAKE) --no-print-directory test-browser

notebooks: $(STAMP)
	$(PY) tools/run_notebooks.py --in-place lessons/*.ipynb solutions/*.ipynb

exercises: $(STAMP)
	$(PY) tools/make_exercises.py

timings: $(STAMP)
	$(PY) tools/run_notebooks.py --timings lessons/*.ipynb solutions/*.ipynb

bench: $(STAMP)
	$(PY) benchmarks/towers_vs_mirrored.py
	$(PY) benchmarks/pinned_workers.py
	$(PY) benchmarks/sweep_time.py
	$(PY) benchmarks/cluster_up_down.py

clean:
	rm -rf $(VENV) runs .pytest_cache
