# dpkit workbook. Two commands on a fresh machine:
#   make lab    create .venv if missing, install, open JupyterLab on the lessons
#   make test   create .venv if missing, install, lint, run unit tests and nbval over the notebooks
# `make` alone (or `make help`) lists every target with one line each; each rule below
# carries that line after `##`. Before creating anything, the install checks the Python
# (PY_MIN..PY_MAX, as pyproject's requires-python) and the platform (TensorFlow publishes
# a wheel for it), and says what to do when either is wrong; a broken .venv is recreated.

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

# The course's checker (the exercises' checks) is a distribution of its own in checks/, apart
# from the learner's library: every install here puts it beside dpkit (editable), because
# the exercises, make test and make test-course call it; `pip install dpkit` does not.
CHECKER := -e ./checks

# The Pythons dpkit installs on. TensorFlow's wheels decide: 2.19 has cp39-cp312, 2.20
# cp39-cp313, 2.21 cp310-cp313, so 3.10-3.13 each have at least one supported release.
# Keep equal to pyproject's requires-python (tests/repo/test_setup_files.py checks).
PY_MIN := 3.10
PY_MAX := 3.13
TF_RANGE := 2.19-2.21

# make test-colab (also called test-oldest): Colab's stack, which is the oldest supported
# TensorFlow with the TensorBoard and Keras that go with it (Keras 3.10 is what Colab pairs
# with TensorFlow 2.19), protobuf 5 and ipywidgets 7.7 as Colab ships them, in a venv of its
# own, running what differs between stacks (the table above make test-portable says what
# runs where). Another release:
# make test-oldest OLDEST_TF=2.21 OLDEST_KERAS=3.12 OLDEST_VENV=.venv-2.21 COLAB_PINS=
OLDEST_TF    ?= 2.19
OLDEST_KERAS ?= 3.10
OLDEST_VENV  ?= .venv-oldest
OLDEST_PY    := $(OLDEST_VENV)/bin/python
OLDEST_STAMP := $(OLDEST_VENV)/.dpkit-$(TF_BUILD)-tf$(OLDEST_TF)
# TensorFlow 2.19 has no wheel for Python 3.13.
OLDEST_PY_MAX ?= $(if $(filter 2.19,$(OLDEST_TF)),3.12,$(PY_MAX))
# What Colab's TensorFlow 2.19 runtime ships besides TensorFlow: protobuf 5, ipywidgets 7.7
# (run `!pip list` in a Colab cell to see when it moves, and change these).
COLAB_PINS   ?= protobuf==5.* ipywidgets==7.7.*
OLDEST_PINS  := tensorflow==$(OLDEST_TF).* tensorflow-cpu==$(OLDEST_TF).* \
                tensorboard==$(OLDEST_TF).* keras==$(OLDEST_KERAS).* $(COLAB_PINS)
OLDEST_LESSONS = $(sort $(wildcard lessons/[0-9][0-9]_*.ipynb))
OLDEST_SOLUTIONS = $(sort $(wildcard solutions/[0-9][0-9]_*.ipynb))
# The rooms whose results depend on the stack: the unit, process and notebook rooms (the
# stand-in Colab install, tests/process/test_colab_install.py, is only here), and the course
# room's checks that start devices or worker processes with right and wrong answers.
COLAB_ROOMS = tests/unit tests/process tests/notebooks $(sort $(wildcard tests/course/test_exercise_checks_*.py))

comma := ,
GOAL  := $(or $(firstword $(MAKECMDGOALS)),lab)

# $(call preflight,PYTHON,NEWEST,WHY): runs before anything is created. Fails, saying why
# and what to type instead, when PYTHON does not run, when it is not Python PY_MIN..NEWEST
# (WHY: whose wheels set that), or when TensorFlow publishes no wheel for the platform.
preflight = \
  info=$$($(1) -c 'import platform, sys; print("%d.%d %s %s %s" % (sys.version_info[0], sys.version_info[1], platform.system(), platform.machine(), platform.libc_ver()[0] or "-"))' 2>/dev/null); \
  if [ -z "$$info" ]; then \
    echo "dpkit: cannot run PYTHON=$(1). Install Python $(PY_MIN)-$(2) and name it, e.g.: make PYTHON=python3.12 $(GOAL)" >&2; exit 1; fi; \
  set -- $$info; ver=$$1; os=$$2; arch=$$3; libc=$$4; \
  case "$$os $$(uname -s 2>/dev/null)" in *Windows*|*MINGW*|*MSYS*|*CYGWIN*) \
    echo "dpkit: native Windows is not supported by this Makefile (it needs a POSIX shell and a Linux or macOS Python). Use WSL2: run 'wsl --install' in PowerShell, then 'make $(GOAL)' in the Ubuntu terminal. Or open the lessons on Colab or Binder (README)." >&2; exit 1;; esac; \
  case "$$os/$$arch/$$libc" in \
    Linux/x86_64/glibc|Linux/aarch64/glibc|Darwin/arm64/*) ;; \
    Darwin/x86_64/*) \
      if [ "$$(sysctl -n hw.optional.arm64 2>/dev/null)" = 1 ]; then \
        echo "dpkit: $(1) is an Intel (x86_64) Python running under Rosetta on an Apple-silicon Mac; TensorFlow $(TF_RANGE) has wheels for arm64 only. Use an arm64 Python, e.g.: make PYTHON=/opt/homebrew/bin/python3.12 $(GOAL)" >&2; \
      else \
        echo "dpkit: this is an Intel Mac. TensorFlow stopped publishing Intel macOS wheels after 2.16, and dpkit needs $(TF_RANGE). Open the lessons on Colab or Binder (README), or use a Linux machine." >&2; \
      fi; exit 1;; \
    Linux/x86_64/*|Linux/aarch64/*) \
      echo "dpkit: this Linux's C library is not glibc (musl, e.g. Alpine?); TensorFlow publishes manylinux (glibc) wheels only. Use a glibc distribution (Debian, Ubuntu, Fedora) or a python:3.12-slim container, or Colab or Binder (README)." >&2; exit 1;; \
    *) \
      echo "dpkit: TensorFlow $(TF_RANGE) publishes no wheel for $$os on $$arch (only Linux x86_64 and aarch64, macOS on Apple silicon, Windows x86_64). Use Colab or Binder (README), or a Linux machine." >&2; exit 1;; \
  esac; \
  n=$$(( $${ver%%.*} * 100 + $${ver\#*.} )); lo=$$(( $(subst ., * 100 + ,$(PY_MIN)) )); hi=$$(( $(subst ., * 100 + ,$(2)) )); \
  if [ $$n -lt $$lo ] || [ $$n -gt $$hi ]; then \
    alt=; for m in 12 11 13 10; do \
      if [ $$((300 + m)) -ge $$lo ] && [ $$((300 + m)) -le $$hi ] && python3.$$m -c pass >/dev/null 2>&1; then alt=python3.$$m; break; fi; done; \
    echo "dpkit: PYTHON=$(1) is Python $$ver, but this needs Python $(PY_MIN)-$(2) ($(3))." >&2; \
    if [ -n "$$alt" ]; then echo "dpkit: this machine has $$alt: make PYTHON=$$alt $(GOAL)" >&2; \
    else echo "dpkit: install Python 3.12 (your package manager, python.org or 'uv python install 3.12'), then: make PYTHON=python3.12 $(GOAL)" >&2; fi; \
    exit 1; fi

# $(call repair_venv,DIR,NEWEST): a DIR whose python is missing or does not run, that has no
# pip, or whose Python is outside PY_MIN..NEWEST is removed, saying why, and made again.
repair_venv = \
  if [ -e $(1) ]; then why=; \
    if ! $(1)/bin/python -c pass >/dev/null 2>&1; then why="its python ($(1)/bin/python) is missing or does not run"; \
    elif ! $(1)/bin/python -m pip --version >/dev/null 2>&1; then why="it has no working pip"; \
    elif ! $(1)/bin/python -c 'import sys; sys.exit(not ($(subst .,$(comma),$(PY_MIN))) <= sys.version_info[:2] <= ($(subst .,$(comma),$(2))))'; then \
      why="its Python is not $(PY_MIN)-$(2)"; fi; \
    if [ -n "$$why" ]; then echo "dpkit: $(1) is broken: $$why. Removing it and creating it again."; rm -rf $(1); fi; \
  fi; \
  if [ ! -e $(1) ]; then echo "dpkit: creating $(1) with $(PYTHON)"; \
    if ! $(PYTHON) -m venv $(1) || ! $(1)/bin/python -m pip --version >/dev/null 2>&1; then rm -rf $(1); \
      echo "dpkit: '$(PYTHON) -m venv' made no working venv. On Debian and Ubuntu install the venv module first (sudo apt install python3-venv, or python3.X-venv for the Python you use)." >&2; exit 1; fi; \
  fi

# A stamp that is up to date over a venv that no longer runs (its Python was removed or
# upgraded, pip deleted) must not stop the repair: such a stamp is treated as out of date.
ifeq ($(shell [ -e $(STAMP) ] && ! $(PY) -c 'import pip' >/dev/null 2>&1 && echo broken),broken)
  .PHONY: $(STAMP)
endif
ifeq ($(shell [ -e $(OLDEST_STAMP) ] && ! $(OLDEST_PY) -c 'import pip' >/dev/null 2>&1 && echo broken),broken)
  .PHONY: $(OLDEST_STAMP)
endif

.DEFAULT_GOAL := help
.PHONY: help lab release test test-course test-portable test-under-load test-pythons test-grading test-slurm test-papermill mutants test-mutants test-browser screenshots test-oldest test-colab site test-site \
	check-versions check-python env lock student-copy course-new course-release course-collect course-autograde course-feedback course-grades lint unit durations notebooks exercises timings bench clean

help: ## list the targets (this text; also what `make` alone prints)
	@echo "dpkit: make <target>   (Python $(PY_MIN)-$(PY_MAX), TensorFlow $(TF_RANGE); PYTHON=$(PYTHON), TF_BUILD=$(TF_BUILD))"
	@awk 'BEGIN {FS = ":[^#]*## "} /^[a-z][a-z-]*:[^=]*## / {printf "  %-16s %s\n", $$1, $$2}' $(firstword $(MAKEFILE_LIST))

check-python: ## check PYTHON and the platform as the install does, and stop
	@$(call preflight,$(PYTHON),$(PY_MAX),TensorFlow $(TF_RANGE) publishes wheels for those)
	@echo "dpkit: PYTHON=$(PYTHON) and this platform are fine for TensorFlow $(TF_RANGE)"

$(STAMP): pyproject.toml checks/pyproject.toml
	@$(call preflight,$(PYTHON),$(PY_MAX),TensorFlow $(TF_RANGE) publishes wheels for those)
	@echo "dpkit: TensorFlow build for this machine: $(TF_BUILD)  (override with TF_BUILD=cpu|cuda|macos)"
	@$(call repair_venv,$(VENV),$(PY_MAX))
	$(PY) -m pip install --quiet --upgrade pip
	@echo "dpkit: installing dpkit with TensorFlow $(TF_RANGE) and JupyterLab (about 1 GB on a fresh machine), and the exercises' checks (checks/)"
	$(PY) -m pip install $(if $(LOCK),-c $(LOCK)) -e '.[$(TF_BUILD),lab,test,grade]' $(CHECKER)
	@rm -f $(VENV)/.dpkit-* && touch $@

env: $(STAMP) ## create .venv and install everything (what the other targets do first)

# A term pins the stack it tested: `make lock` writes what .venv holds; `make lab LOCK=<file>`
# (or make env/test) installs within it. The file is for Linux x86-64, Python 3.11, TF_BUILD=cpu.
LOCK_FILE := requirements/lock-linux-cpu-py311.txt
lock: $(STAMP) ## write $(LOCK_FILE) from .venv (pip freeze): the stack a term pins with LOCK=
	@{ echo "# The supported stack, as tested: Linux x86-64, Python 3.11, TF_BUILD=cpu, every extra make test installs."; \
	  echo "# Written by \`make lock\` (pip freeze of .venv); used as pip constraints by \`make lab LOCK=$(LOCK_FILE)\`."; \
	  $(PY) -m pip freeze --exclude-editable; } > $(LOCK_FILE)
	@echo "dpkit: wrote $(LOCK_FILE)"

lab: $(STAMP) ## open JupyterLab on lesson 00 (127.0.0.1 only, token; PORT=8888)
	@echo "dpkit: JupyterLab on http://127.0.0.1:$(PORT) (localhost only, token required)"
	$(VENV)/bin/jupyter lab --ip=127.0.0.1 --port=$(PORT) --ServerApp.root_dir=. \
		$(if $(filter 0,$(shell id -u)),--allow-root) lessons/00_setup_and_devices.ipynb

lint: $(STAMP) ## ruff: lint and format check of the library, tests, tools and notebooks
	$(VENV)/bin/ruff check dpkit checks tests browser_tests tools benchmarks lessons solutions exercises
	$(VENV)/bin/ruff format --check dpkit checks tests browser_tests tools benchmarks lessons solutions exercises

# tests/ has four rooms, marked by folder (conftest.py): unit (no child process, no kernel:
# tests/unit/conftest.py fails one that starts a process), process, notebooks and repo.
UNIT_WORKERS ?= 2  # each imports TensorFlow once; two keep both cores of a laptop busy
unit: $(STAMP) ## the fast door: tests/unit only (no child process, no kernel; under a minute)
	@start=$$(date +%s); \
	$(PY) -m pytest tests/unit -p no:cacheprovider -q -n $(UNIT_WORKERS) --dist loadfile; \
	code=$$?; echo "dpkit: make unit took $$(( $$(date +%s) - start )) s (exit $$code)"; exit $$code

# Unit tests, then nbval re-executes every lesson in a fresh kernel and compares the cells
# tagged nbval-check-output with their committed outputs. The rooms are the folders of
# tests/; the course room (tests/course: every solution run as stored with its checks
# passing, each exercise's stubs and tabled wrong answers refused, the nbgrader workflow) is
# make test-course's, which .ci/run runs after make test: run it after changing a solution, a
# check (checks/dpkit_checks) or a table, or a library module a solution uses.
# pytest-xdist runs TEST_WORKERS files at a time (--dist loadfile keeps each notebook's
# cells, and each test file, in one worker), longest first: conftest.py orders them by the
# seconds `make durations` stored in tests/durations.json, and --no-loadscope-reorder keeps
# that order. Three files at a time on two cores: make test's files spent 1,492 s in 2
# workers for 1,334 CPU-seconds (tests/durations.json, a quiet 2-core AMD EPYC), waiting on
# clusters, sleeps and timeouts for the rest; a third file fills that wait. A file peaks at
# up to 2.5 GB (README's memory table: lesson 05), so three want about 8 GB.
TEST_WORKERS ?= 3
NBVAL_FLAGS := --nbval-lax --nbval-current-env --nbval-cell-timeout=900 -p no:cacheprovider
TEST_ROOMS := tests/unit tests/process tests/notebooks tests/repo

test: $(STAMP) ## lint, exercises current, every lesson under nbval, the unit, process, notebook and repo tests
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory lint && \
	$(PY) tools/make_exercises.py --check && \
	$(PY) -m pytest lessons $(TEST_ROOMS) $(NBVAL_FLAGS) -v -n $(TEST_WORKERS) --dist loadfile \
		--no-loadscope-reorder --ignore=tests/notebooks/test_papermill.py \
		--ignore=tests/process/test_colab_install.py --ignore=tests/process/test_slurm.py \
		--deselect $(BUILT_SITE_LEAKS) --durations=15 $(PYTEST_EXTRA); \
	code=$$?; echo "dpkit: make test took $$(( $$(date +%s) - start )) s (exit $$code)"; exit $$code

# The course room: every solution runs as stored and passes its checks, every exercise's
# stubs fail them, every wrong answer of tests/wrong_answers/ is refused with its message (a
# mutation test of the checks), the checks that need devices or worker processes run with
# right and wrong answers (ex04, ex06, ex08; the others' tests are unit tests), and nbgrader's
# workflow runs for three students over two weeks, and for eleven answers that attack the
# grader instead (tests/course/test_tampering.py: each scores 0). .ci/run runs it.
test-course: $(STAMP) ## every solution runs and passes its checks, which refuse every stub and tabled wrong answer; the nbgrader workflow, attacks on it scoring 0
	@start=$$(date +%s); \
	$(PY) -m pytest tests/course -p no:cacheprovider -v -n $(TEST_WORKERS) --dist loadfile \
		--no-loadscope-reorder --durations=10 $(PYTEST_EXTRA); \
	code=$$?; echo "dpkit: make test-course took $$(( $$(date +%s) - start )) s (exit $$code)"; exit $$code

# make test, storing each file's seconds in tests/durations.json (commit it when files were
# added or became much slower: it orders make test's files, longest first).
# (A flag on make test's own pytest, not PYTEST_ADDOPTS, which the tests' own pytest runs in
# child processes would inherit and refuse.)
durations: $(STAMP) ## make test, and store each file's seconds in tests/durations.json
	$(MAKE) --no-print-directory test PYTEST_EXTRA=--store-durations

# Where each check runs. .ci/run runs every target named here (tests/repo/test_setup_files.py
# checks). Stacks: M is .venv (make test's install: the newest TensorFlow for the Python), C is
# .venv-oldest (make test-colab: Colab's stack, TensorFlow 2.19, Keras 3.10, protobuf 5,
# ipywidgets 7.7). Arithmetic: "off" is the Makefile's TF_ENABLE_ONEDNN_OPTS=0 (what the
# committed outputs were recorded with); "portable" is PORTABLE_ENV below, oneDNN on (Colab's
# default: other kernels, other summation orders) and one intra-op thread (other partial sums).
#   ruff, exercises current with their solutions ......... make test          M
#   every lesson under nbval ............................. make test          M  off
#                                                           make test-colab    C  portable
#   every solution: runs, checked cells as stored ......... make test-course   M  off (live kernel)
#                                                           make test-colab    C  portable (nbval)
#   unit, process, notebook rooms ........................ make test          M  off
#                                                           make test-colab    C  off
#   the stand-in Colab install cell ...................... make test-colab    C  off
#   course room: the checks with devices and workers ..... make test-course   M  off
#     (tests/course/test_exercise_checks_*.py)              make test-colab    C  off
#   course room: stubs, tabled wrong answers, nbgrader ... make test-course   M  off
#   nbgrader's exchange between real Unix users (root) .. make test-course   M
#   the hub's values, image scripts (deploy/jupyterhub) .. make test          M
#   repo room (the files themselves, no TensorFlow run) .. make test          M
#   lessons 00, 02, 03, 04, 10 at other device counts .... make test-portable M  portable
#   lessons through papermill with other parameters ...... make test-papermill M off
#   lesson 08's Slurm job on a real one-node Slurm ....... make test-slurm    M  off
#   the unit room and lesson 06 on Python 3.10 and 3.13 .. make test-pythons  newest TensorFlow each
#   the website; JupyterLab and the site in Chromium ..... make site, make test-browser  M
#   mutants of lessons 00, 02, 03's checked cells ........ make test-mutants  M  off
#     (the others: run by hand, recorded in tests/mutants_record.json; the repo room fails a
#     lesson changed since its recorded run)
# Until issue 44 test-colab ran all of make test and make test-course again on C with oneDNN
# off (the repo room, the stubs, wrong answers and nbgrader, papermill too), and test-portable
# ran every lesson and solution with the portable arithmetic on M: each check is still run,
# the lessons and solutions under portable arithmetic once, on C, where Colab's learners meet it.
PORTABLE_ENV := TF_ENABLE_ONEDNN_OPTS=1 TF_NUM_INTRAOP_THREADS=1

# The lessons at another device count, whose checked cells must print the same True/False
# (tests/notebooks/portable_device_counts.py, through papermill), under the portable
# arithmetic. Every lesson and solution under nbval with that arithmetic is make test-colab's.
# The runs are independent: --dist load deals them out (their order in the file balances them).
test-portable: $(STAMP) ## lessons 00, 02, 03, 04, 10 at other device counts, oneDNN on and one thread: the checked claims must hold
	@start=$$(date +%s); \
	$(PORTABLE_ENV) $(PY) -m pytest tests/notebooks/portable_device_counts.py -p no:cacheprovider \
		-v -n $(TEST_WORKERS) --dist load --durations=10; \
	code=$$?; echo "dpkit: make test-portable took $$(( $$(date +%s) - start )) s (exit $$code)"; exit $$code

# Colab's stack in its own venv (its install is the oldest TensorFlow pinned with Colab's
# packages), in two passes: every lesson and solution under nbval with the portable arithmetic,
# then COLAB_ROOMS with the Makefile's (papermill's parameters run on M: make test-papermill).
# OLDEST_TF=2.20 tries the middle release instead. VENV is passed on so that tests which run
# make themselves (test_lab) use this venv too.
$(OLDEST_STAMP): pyproject.toml checks/pyproject.toml
	@$(call preflight,$(PYTHON),$(OLDEST_PY_MAX),TensorFlow $(OLDEST_TF) publishes wheels up to $(OLDEST_PY_MAX))
	@$(call repair_venv,$(OLDEST_VENV),$(OLDEST_PY_MAX))
	$(OLDEST_PY) -m pip install --quiet --upgrade pip
	@printf '%s\n' $(foreach p,$(OLDEST_PINS),'$(p)') > $(OLDEST_VENV)/constraints.txt
	@echo "dpkit: installing dpkit with TensorFlow $(OLDEST_TF), pinned by $(OLDEST_VENV)/constraints.txt: $(OLDEST_PINS)"
	$(OLDEST_PY) -m pip install -c $(OLDEST_VENV)/constraints.txt -e '.[$(TF_BUILD),lab,test,grade]' $(CHECKER)
	@rm -f $(OLDEST_VENV)/.dpkit-* && touch $@

test-colab: test-oldest ## Colab's stack (TF 2.19, Keras 3.10, protobuf 5, ipywidgets 7.7): lessons, solutions (oneDNN on), unit, process, notebook rooms
test-oldest: $(OLDEST_STAMP) ## what differs between stacks, on the oldest TensorFlow (2.19) and Colab's stack, in .venv-oldest
	@start=$$(date +%s); \
	$(OLDEST_PY) -c 'import keras, tensorboard, tensorflow as tf; print("dpkit: TensorFlow", tf.__version__, "Keras", keras.__version__, "TensorBoard", tensorboard.__version__)' || exit 1; \
	echo "dpkit: every lesson and solution under nbval with $(PORTABLE_ENV)"; \
	$(PORTABLE_ENV) VENV=$(OLDEST_VENV) $(OLDEST_PY) -m pytest $(OLDEST_LESSONS) $(OLDEST_SOLUTIONS) \
		$(NBVAL_FLAGS) -v -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=10; \
	notebooks=$$?; middle=$$(date +%s); \
	echo "dpkit: $(COLAB_ROOMS)"; \
	VENV=$(OLDEST_VENV) $(OLDEST_PY) -m pytest $(COLAB_ROOMS) -p no:cacheprovider -v -n $(TEST_WORKERS) \
		--dist loadfile --no-loadscope-reorder --ignore=tests/notebooks/test_papermill.py \
		--ignore=tests/process/test_slurm.py --durations=10; \
	rooms=$$?; end=$$(date +%s); \
	echo "dpkit: make test-colab took $$(( end - start )) s: lessons and solutions $$(( middle - start )) s (exit $$notebooks), rooms $$(( end - middle )) s (exit $$rooms)"; \
	[ $$notebooks = 0 ] && [ $$rooms = 0 ]

# The oldest and the newest Python pyproject admits (PY_MIN, PY_MAX), each in a venv of its
# own (.venv-py3.10, .venv-py3.13) that make env installs (VENV and PYTHON passed on: the same
# Python and platform check, the same repair, the same extras, pip's newest TensorFlow for that
# Python), then the unit room (two workers) and, beside it, one lesson under nbval: lesson 06,
# which imports the process layer (dpkit.plumbing.contract) and starts TensorBoard as a child,
# so a 3.11-only feature there fails it (lessons 00-04 do not import it). Each Python is python3.X when that runs,
# else pyenv's install of it. A Python that is missing, or that TensorFlow $(TF_RANGE)
# publishes no wheel for, fails the target, saying which: pyproject would be promising it.
PYTHONS := $(PY_MIN) $(PY_MAX)
PYTHONS_LESSON := lessons/06_tensorboard.ipynb
test-pythons: ## the unit room and lesson 06 (nbval) on the oldest and newest Python (PY_MIN, PY_MAX), each in .venv-pyX.Y
	@bad=0; report=; \
	for v in $(PYTHONS); do \
	  venv=.venv-py$$v; py=; \
	  for c in python$$v $$(pyenv root 2>/dev/null)/versions/$$v.*/bin/python$$v; do \
	    if $$c -c pass >/dev/null 2>&1; then py=$$c; break; fi; done; \
	  if [ -z "$$py" ]; then bad=1; report="$$report\n  Python $$v: not on this machine (no python$$v that runs, none in pyenv)"; \
	    echo "dpkit: no Python $$v here (python$$v does not run; pyenv has none). Install it (uv python install $$v, or pyenv install $$v), then make test-pythons" >&2; continue; fi; \
	  echo "dpkit: Python $$v is $$py ($$($$py -c 'import sys; print(sys.version.split()[0])')), in $$venv"; \
	  t0=$$(date +%s); log=$$(mktemp); \
	  { $(MAKE) --no-print-directory env VENV=$$venv PYTHON=$$py; echo $$? > $$log.rc; } 2>&1 | tee $$log; \
	  code=$$(cat $$log.rc); install=$$(( $$(date +%s) - t0 )); \
	  if [ $$code != 0 ]; then bad=1; \
	    if grep -q 'No matching distribution found for tensorflow' $$log; then \
	      why="TensorFlow $(TF_RANGE) publishes no wheel for Python $$v on $$(uname -s) $$(uname -m): dpkit cannot run there, yet pyproject's requires-python admits it"; \
	    else why="the install failed (exit $$code, above)"; fi; \
	    echo "dpkit: Python $$v: $$why" >&2; report="$$report\n  Python $$v: $$why"; rm -f $$log $$log.rc; continue; fi; \
	  rm -f $$log $$log.rc; \
	  tf=$$($$venv/bin/python -c 'import tensorflow as tf; print(tf.__version__)' 2>/dev/null); \
	  t0=$$(date +%s); log=$$(mktemp); \
	  { $$venv/bin/python -m pytest $(PYTHONS_LESSON) $(NBVAL_FLAGS) -q; echo $$? > $$log.rc; date +%s > $$log.end; } > $$log 2>&1 & \
	  $$venv/bin/python -m pytest tests/unit -p no:cacheprovider -q -n $(UNIT_WORKERS) --dist loadfile; \
	  unit=$$?; t1=$$(date +%s); wait; \
	  echo "dpkit: $(PYTHONS_LESSON) under nbval (beside the unit room):"; cat $$log; \
	  lesson=$$(cat $$log.rc); t2=$$(cat $$log.end); rm -f $$log $$log.rc $$log.end; \
	  [ $$unit = 0 ] && [ $$lesson = 0 ] || bad=1; \
	  report="$$report\n  Python $$v (TensorFlow $$tf): install $$install s; unit room $$(( t1 - t0 )) s (exit $$unit), beside it $(PYTHONS_LESSON) under nbval $$(( t2 - t0 )) s (exit $$lesson)"; \
	done; \
	printf "dpkit: make test-pythons:$$report\n"; exit $$bad

# Every supported TensorFlow resolves with dpkit (pip --dry-run against the package index:
# needs the network, downloads nothing big). Cases are Linux x86-64 wheels for the Python
# named, so wheel tags and requires-python come out the same on any machine. pip evaluates
# environment markers (python_version) with the Python that runs it, not --python-version:
# the cases with every extra use that Python's version, the others install no marked extra.
CHECK_PLATFORMS := manylinux2014_x86_64 $(foreach v,17 18 19 20 21 22 23 24 25 26 27 28 29 30 31,manylinux_2_$(v)_x86_64)
check-versions: $(STAMP) ## pip --dry-run: TensorFlow 2.19, 2.20, 2.21 each resolve with dpkit (network)
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; bad=0; \
	mkdir "$$tmp/src" && cp -R pyproject.toml README.md dpkit "$$tmp/src/" && \
	$(PY) -m pip wheel --quiet --no-deps -w "$$tmp/wheel" "$$tmp/src" >/dev/null 2>&1 || { echo "dpkit: cannot build dpkit's wheel"; exit 1; }; \
	whl=$$(ls "$$tmp"/wheel/dpkit-*.whl); here=$$($(PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])'); \
	case_() { want=$$1; py=$$2; shift 2; \
	  if $(PY) -m pip install --dry-run --ignore-installed --quiet --report "$$tmp/r.json" \
	       --only-binary=:all: --python-version $$py $(foreach p,$(CHECK_PLATFORMS),--platform $(p)) \
	       --target "$$tmp/t" "$$@" >"$$tmp/log" 2>&1; then \
	    got=resolves; detail=$$($(PY) -c 'import json, sys; d = json.load(open(sys.argv[1])); keep = {"tensorflow", "tensorflow-cpu", "keras", "tensorboard", "numpy", "protobuf", "nbgrader"}; print(" ".join(i["metadata"]["name"].replace("_", "-") + "==" + i["metadata"]["version"] for i in d["install"] if i["metadata"]["name"].lower().replace("_", "-") in keep))' "$$tmp/r.json"); \
	  else got=refused; detail=$$(grep -E '^ERROR' "$$tmp/log" | grep -v 'ResolutionImpossible' | tail -1 | cut -c1-150); fi; \
	  what=$$(echo "$$*" | sed "s|$$whl|dpkit|"); \
	  if [ $$got = $$want ]; then mark=ok; else mark=FAIL; bad=1; fi; \
	  printf '%-4s Python %-4s %-56s %-8s %s\n' $$mark $$py "$$what" $$got "$$detail"; }; \
	for v in 2.19 2.20 2.21; do \
	  case_ resolves $$here "$$whl[cpu,lab,test,grade]" "tensorflow-cpu==$$v.*"; \
	  case_ resolves $$here "$$whl[macos,lab,test,grade]" "tensorflow==$$v.*"; \
	  case_ resolves 3.10 "$$whl" "tensorflow-cpu==$$v.*"; \
	  case_ resolves 3.12 "$$whl" "tensorflow==$$v.*"; \
	done; \
	case_ refused  3.13 "$$whl[cpu,lab]" "tensorflow-cpu==2.19.*"; \
	case_ resolves 3.13 "$$whl[cpu,lab]" "tensorflow-cpu==2.20.*"; \
	case_ resolves 3.13 "$$whl[cpu,lab]" "tensorflow-cpu==2.21.*"; \
	case_ refused  3.14 "$$whl[cpu]"; \
	case_ refused  3.9  "$$whl[cpu]"; \
	if [ $$bad = 0 ]; then echo "dpkit: every case as expected"; else echo "dpkit: some cases differ (FAIL above)"; fi; exit $$bad

# The same suite while one busy loop per core keeps the machine busy (always stopped after).
test-under-load: $(STAMP) ## make test while one busy loop per core keeps the machine busy
	$(PY) tools/busy.py -- $(MAKE) --no-print-directory test

# Mutants (tools/mutants.py): each checked cell's recorded bugs, run in the lesson's kernel,
# must each change that cell's checked output. A lesson's mutant run takes 4 to 9 times its
# plain run (each chain runs as written, mutated, and as written again). Seconds per lesson,
# one lesson at a time on 2 cores shared with other work (load about 5): 00 26, 01 177,
# 02 148, 03 116, 04 124, 09 and 10 in tests/mutants_record.json (at a load of 11, 01 took
# 262 and 04 430). CI already takes about 2,200 of its 2,700 s, so it runs the mutants of
# MUTANT_CI_LESSONS (00, 02, 03: 290 s of those one at a time; make test-mutants, two at a
# time, took 210 s at a load of 5 to 7; tests/repo/test_mutants.py keeps its list equal);
# make mutants runs every lesson and records each passing run's fingerprint in
# tests/mutants_record.json, which the repo room checks for the others.
MUTANT_CI_LESSONS := 00 02 03
MUTANT_JOBS ?= 2
MUTANT_LESSONS ?=  # e.g. lessons/05_*.ipynb: only those (default: every lesson)
mutants: $(STAMP) ## every lesson's mutants: each checked cell's recorded bugs must change its output; records the runs
	$(PY) tools/mutants.py -j $(MUTANT_JOBS) --record $(MUTANT_LESSONS)
test-mutants: $(STAMP) ## the mutants of lessons 00, 02 and 03 (CI's share; make mutants runs every lesson)
	@start=$$(date +%s); \
	$(PY) tools/mutants.py -j $(MUTANT_JOBS) $(foreach n,$(MUTANT_CI_LESSONS),$(wildcard lessons/$(n)_*.ipynb)); \
	code=$$?; echo "dpkit: make test-mutants took $$(( $$(date +%s) - start )) s (exit $$code)"; exit $$code

# Lessons through papermill's command line with other parameters (README, "Shrink a
# lesson"), and a bad value stopped at once; kept out of make test for its 12-minute budget.
test-papermill: $(STAMP) ## lessons 00, 01 and 06 through papermill with other parameters
	$(PY) -m pytest tests/notebooks/test_papermill.py -p no:cacheprovider -v -n $(TEST_WORKERS)

# Lesson 08's Slurm job on a real one-node Slurm (tools/one_node_slurm.py starts munged,
# slurmctld and slurmd, apt-get installing slurm-wlm and munge where missing and root may):
# the workers against NumPy SGD on the whole batch, scancel, the daemons reaped. Skips, saying
# why, where Slurm cannot run. About 50 s on 2 cores; .ci/run runs it (not make test).
test-slurm: $(STAMP) ## lesson 08's Slurm job on a real one-node Slurm started here (root; installs slurm-wlm)
	$(PY) -m pytest tests/process/test_slurm.py -p no:cacheprovider -v -rs

# nbgrader's real commands on every exercise (make test-course autogrades exercises 05 and 09).
test-grading: $(STAMP) ## the course workflow with every exercise as a week (make test-course: ex05, ex09)
	DPKIT_GRADE_ALL=1 $(PY) -m pytest tests/course/test_grading.py -p no:cacheprovider -v

# The workbook in a real browser: JupyterLab driven in headless Chromium by Playwright, and
# the website (browser_tests/test_site.py builds it first).
# Chromium comes from the system's package manager (Playwright's own download needs the
# internet); it is installed here when missing and we may (root, or sudo without a password).
need_chromium = \
	command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	      echo "dpkit: installing Chromium with apt-get"; \
	      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	    elif command -v apt-get >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
	      echo "dpkit: installing Chromium with sudo apt-get"; \
	      sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	    else echo "dpkit: Chromium is missing and cannot be installed here; the browser tests will skip"; fi; }

# Jupyter Book is here, so the student copy's built website is searched for answers too
# (make test has only its staged pages: tests/repo/test_leaks.py).
BUILT_SITE_LEAKS := tests/repo/test_leaks.py::test_the_student_copys_built_website_leaks_nothing
test-browser: $(STAMP) ## lessons 00, 05, 06, TensorBoard behind a proxy in JupyterLab, and the website, in headless Chromium (screenshots in runs/)
	@$(need_chromium)
	$(PY) -m pip install --quiet -e '.[$(TF_BUILD),lab,test,grade,browser,site]'
	$(PY) -m pytest browser_tests $(BUILT_SITE_LEAKS) -p no:cacheprovider -v -rs

# The workbook as a website (README, "Read it as a website"): Jupyter Book 1.x builds the
# committed notebooks, nothing executed, offline, into site/ (tools/website.py).
SITE_STAMP := $(VENV)/.dpkit-site
$(SITE_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install --quiet -e '.[$(TF_BUILD),site]'
	@touch $@

site: $(SITE_STAMP) ## the workbook as a website in site/: Jupyter Book from the committed notebooks, offline
	$(PY) tools/website.py

# Only the website's browser test: it builds the site, serves it on 127.0.0.1 and checks
# every page in headless Chromium (screenshots in runs/site/).
test-site: $(SITE_STAMP) ## build the website and check it in headless Chromium (pages, links, alt text, launch buttons, search)
	@$(need_chromium)
	$(PY) -m pip install --quiet -e '.[$(TF_BUILD),site,browser]'
	$(PY) -m pytest browser_tests/test_site.py $(BUILT_SITE_LEAKS) -p no:cacheprovider -v -rs

# Lesson 06's pictures of TensorBoard (lessons/images/tensorboard_*.png): TensorBoard on
# the run lesson 06 makes, its Scalars and Histograms dashboards shot in headless Chromium.
# The same Chromium and Playwright as test-browser, running only browser_tests/test_screenshots.py.
screenshots: ## refresh lesson 06's TensorBoard pictures in lessons/images/
	DPKIT_UPDATE_SCREENSHOTS=1 PYTEST_ADDOPTS="-k screenshot" $(MAKE) --no-print-directory test-browser
	$(PY) tools/attach_images.py  # lesson 06 carries the new pictures (Colab shows them)

notebooks: $(STAMP) ## re-execute lessons and solutions in place (outputs stored)
	$(PY) tools/run_notebooks.py --in-place lessons/*.ipynb solutions/*.ipynb

# The workbook without its answers, to publish as a branch (README, "Teaching with it").
# STUDENT_REF (and STUDENT_REPOSITORY=OWNER/NAME when the copy has a repository of its own)
# also name what the course's released notebooks install from (course-new).
OUT ?= ../dpkit-student
STUDENT_REF ?= student
STUDENT_REPOSITORY ?=
student_where = --ref $(STUDENT_REF) $(if $(STUDENT_REPOSITORY),--repository $(STUDENT_REPOSITORY))
student-copy: $(STAMP) ## write the student copy to OUT (no solutions/tests; launches open STUDENT_REF)
	$(PY) tools/student_copy.py $(OUT) $(student_where)

# A graded course with nbgrader (README, "Teaching with it"): one assignment per exercise.
# make course-new, then each week make course-release A=ex03, ..., course-feedback A=ex03.
COURSE ?= course
COURSE_ID ?= dpkit
EXCHANGE ?=
A ?=
course-new: $(STAMP) ## create or refresh a course folder and its students' config (COURSE=course COURSE_ID=dpkit EXCHANGE=shared folder; installs from STUDENT_REF)
	$(PY) tools/course.py new $(COURSE) --course-id $(COURSE_ID) $(student_where) $(if $(EXCHANGE),--exchange $(EXCHANGE))
course-release: $(STAMP) ## generate and release assignment A (e.g. A=ex03) to the exchange
	$(PY) tools/course.py release $(COURSE) $(A)
course-collect: $(STAMP) ## collect what students submitted for A
	$(PY) tools/course.py collect $(COURSE) $(A)
course-autograde: $(STAMP) ## run every check of A's submissions, each in a process of its own; scores in COURSE/gradebook.db
	$(PY) tools/course.py autograde $(COURSE) $(A)
course-feedback: $(STAMP) ## write and release A's feedback (students: nbgrader fetch_feedback)
	$(PY) tools/course.py feedback $(COURSE) $(A)
course-grades: $(STAMP) ## print A's scores, one line per student and notebook
	$(PY) tools/course.py grades $(COURSE) $(A)

# A release a term can pin (README, "Pin the term"): tools/release.py commits pyproject's
# version and launch ref vVERSION with every badge, install cell and Binder badge following
# it, and tags that commit; `python tools/release.py --unpin` follows main again.
release: $(STAMP) ## cut release VERSION (e.g. make release VERSION=0.2.0): launches pinned to tag vVERSION, committed and tagged
	@test -n "$(VERSION)" || { echo "dpkit: say which version: make release VERSION=0.2.0"; exit 2; }
	$(PY) tools/release.py $(VERSION)

exercises: $(STAMP) ## regenerate exercises/ from solutions/
	$(PY) tools/make_exercises.py

timings: $(STAMP) ## seconds per notebook; fails if one takes over 60 s
	$(PY) tools/run_notebooks.py --timings lessons/*.ipynb solutions/*.ipynb

bench: $(STAMP) ## towers vs MirroredStrategy, pinned workers, sweep time, cluster up/down, predicted pinned run, gradient packs
	$(PY) benchmarks/towers_vs_mirrored.py
	$(PY) benchmarks/pinned_workers.py
	$(PY) benchmarks/sweep_time.py
	$(PY) benchmarks/cluster_up_down.py
	$(PY) benchmarks/predict_pinned.py
	$(PY) benchmarks/overlap_packs.py --out runs/bench/overlap_packs.json

clean: ## remove .venv, .venv-oldest, .venv-py3.X (make test-pythons), runs/ and pytest's cache
	rm -rf $(VENV) $(OLDEST_VENV) $(foreach v,$(PYTHONS),.venv-py$(v)) runs .pytest_cache
