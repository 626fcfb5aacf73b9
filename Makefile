# Thin wrapper: every recipe is one line over Python (scripts/bootstrap.py, python -m autograder).
# The first `make lab` or `make test` sets up .venv (and the graphviz binary) by itself.

PYTHON := .venv/bin/python
SETUP  := .venv/.installed
JOBS   ?= 1

.DEFAULT_GOAL := help
.PHONY: help setup lab test notebooks check changes fixtures grade site lint clean

help: ## List the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

setup: $(SETUP) ## Install graphviz, bubblewrap and chromium (if missing) and the project into .venv

$(SETUP): pyproject.toml scripts/bootstrap.py
	$(LOCALE) python3 scripts/bootstrap.py

# LANG given on make's command line is the course's edition (LANG=zh-CN); LANG from the
# environment is the locale, and means English.
EDITION = $(if $(filter command line,$(origin LANG)),--lang '$(LANG)')
# ...and the commands make runs then get a locale that exists instead (zh-CN is none).
LOCALE = $(if $(filter command line,$(origin LANG)),LANG=C.UTF-8)

lab: $(SETUP) ## Start JupyterLab on your workspace/ (made from notebooks/); PORT=, TOKEN=, LANG=zh-CN optional
	@$(LOCALE) $(PYTHON) -m autograder lab $(EDITION) $(if $(PORT),--port $(PORT)) $(if $(filter-out undefined,$(origin TOKEN)),--token '$(TOKEN)')

test: $(SETUP) ## Run every test: helpers, notebooks, build, grading pipeline
	$(PYTHON) -m pytest

notebooks: $(SETUP) ## Regenerate notebooks/ from solutions/
	$(PYTHON) -m autograder build

check: $(SETUP) ## Grade your notebooks as the grader does (all of workspace/, or NB=path; LANG=zh-CN: workspace/zh-CN/); STRICT=1 to exit 1 while one fails
	@$(LOCALE) $(PYTHON) -m autograder check $(EDITION) $(if $(STRICT),,--exit-zero) $(NB)

changes: $(SETUP) ## Show what a new version of the course changed in the exercises you answered (LANG=zh-CN: workspace/zh-CN/)
	@$(LOCALE) $(PYTHON) -m autograder changes $(EDITION)

fixtures: $(SETUP) ## Regenerate the sample submissions in autograder/fixtures/
	$(PYTHON) -m tests.support

grade: $(SETUP) ## Grade a class: make grade ASSIGNMENT=01_leaf_tensors SUBMISSIONS=folder JOBS=2
	$(PYTHON) -m autograder grade $(ASSIGNMENT) $(SUBMISSIONS) --jobs $(JOBS)

site: $(SETUP) ## Build the course's website into build/site/ (REPOSITORY=https://github.com/owner/name adds Colab links)
	$(PYTHON) -m autograder.site $(if $(REPOSITORY),--repository $(REPOSITORY))

lint: $(SETUP) ## ruff lint and format check over src, autograder, tests, solutions
	$(PYTHON) -m ruff check . && $(PYTHON) -m ruff format --check .

clean: ## Remove generated course data (build/, submitted/, autograded/, feedback/, exports/, gradebook.db)
	rm -rf build submitted autograded feedback exports gradebook.db
