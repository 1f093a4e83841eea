# Two entry points, each sets itself up on a fresh machine (Python 3.11+ with venv):
#   make demo   install, then run the release gate on the bundled example
#   make test   install with test extras, then lint and run the test suite
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test lint clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

demo: $(VENV)/.installed
	$(PY) examples/demo.py

lint: $(VENV)/.installed
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

test: lint
	$(PY) -m pytest -n auto  # pytest-xdist: one worker per core

clean:
	rm -rf $(VENV) demo-out build dist *.egg-info
