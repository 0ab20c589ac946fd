# vipu-sim: `make demo` and `make test` are all a fresh machine needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test proto proto-check bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[server,dev]'
	touch $(STAMP)

demo: $(STAMP)
	bash scripts/demo.sh

# Three workers, each taking the next test when free: the tests often wait (servers, Ray, subprocesses), so a third
# keeps the 2 cores busy while one waits. The tests' vipu calls fork from a process that has imported the CLI
# (tests/cli_forks.py): a Python start and grpc's import each were most of the suite's CPU.
test: $(STAMP) proto-check
	$(BIN)/python -m pytest -n 3 --dist worksteal

# Regenerate the gRPC/protobuf code in vipu/v1 from protos/vipu/v1.
proto: $(STAMP)
	$(BIN)/python -m grpc_tools.protoc -Iprotos --python_out=. --pyi_out=. --grpc_python_out=. protos/vipu/v1/*.proto

# Fail if the committed generated code differs from what the protos generate.
proto-check: $(STAMP)
	@tmp=$$(mktemp -d) && $(BIN)/python -m grpc_tools.protoc -Iprotos --python_out=$$tmp --pyi_out=$$tmp \
		--grpc_python_out=$$tmp protos/vipu/v1/*.proto && \
	for f in $$tmp/vipu/v1/*.py*; do cmp -s $$f vipu/v1/$$(basename $$f) || \
		{ echo "vipu/v1/$$(basename $$f) is stale: run 'make proto'"; rm -rf $$tmp; exit 1; }; done; rm -rf $$tmp

bench: $(STAMP)
	for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .demo .pytest_cache build *.egg-info
