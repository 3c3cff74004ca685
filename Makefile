# NovelGraph: `make run` serves the app on 127.0.0.1:8000 (`make run PORT=8001` serves elsewhere); `make test` runs every test.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The port `make run` serves on (the logins and the demo's book page it prints name it too).
PORT ?= 8000

.PHONY: run worker test fuzz setup migrate bench lint browser-deps clean

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

setup: $(STAMP)

migrate: setup
	$(PY) manage.py migrate --noinput

# migrate (the curated library is seeded by a migration), load the demo mystery when there are no
# books yet, ensure the local author (a plain author) and a staff account, print the three logins, serve (ASGI: the site, the API and
# the MCP server's streamable HTTP at /mcp); the agents' worker runs beside the server and stops with it.
run: migrate
	NOVELGRAPH_LOCAL_URL=http://127.0.0.1:$(PORT) $(PY) manage.py demo --if-empty
	NOVELGRAPH_LOCAL_URL=http://127.0.0.1:$(PORT) $(PY) manage.py ensure_local_author
	@echo "Agents: a worker (python manage.py db_worker) runs Sol's, Terra's and Luna's runs beside the server."
	$(PY) manage.py agent_runs_reap --verbosity 0
	$(PY) manage.py db_worker --no-reload --verbosity 0 & worker=$$!; \
	trap 'kill $$worker 2>/dev/null' EXIT INT TERM; \
	$(PY) -m uvicorn novelgraph.asgi:application --host 127.0.0.1 --port $(PORT)

# The agents' worker alone (run as many as you like against one PostgreSQL database).
worker: migrate
	$(PY) manage.py agent_runs_reap
	$(PY) manage.py db_worker --no-reload

# Two processes (pytest-xdist) by default, as many as CI's machine has cores; TEST_WORKERS=0 runs in one.
# worksteal: a worker that runs out takes tests queued for the other, so the slow tests at the end do not leave
# one core idle; the 20 slowest are listed at the end, to see where the time goes.
TEST_WORKERS ?= 2
test: setup
	$(PY) -m pytest -n $(TEST_WORKERS) $(if $(filter-out 0,$(TEST_WORKERS)),--dist worksteal) --durations=20 $(PYTEST_ARGS)

# Fuzz every API operation (author, Sol, Luna keys) and every browser form on SQLite, then PostgreSQL
# (FUZZ_DATABASE_URL, default the local server): FUZZ_EXAMPLES per operation, a random seed printed
# for replay (FUZZ_SEED=N). Fails on any 5xx.
FUZZ_EXAMPLES ?= 50
FUZZ_SEED ?=
fuzz: setup
	$(PY) scripts/fuzz.py --examples $(FUZZ_EXAMPLES) $(if $(FUZZ_SEED),--seed $(FUZZ_SEED))

bench: setup
	$(PY) -m bench.run_all $(BENCH_ARGS)

lint: setup
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) var staticfiles .pytest_cache
