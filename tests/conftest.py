"""Fixtures shared by the test modules (helpers live in ``support``; every test's time
limit in ``time_limits``, a plugin the root conftest loads), and the groups the default
suite leaves out (:data:`SLOW`)."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from drivers import DRIVERS, Driver
from toolnursery.examples import fill_sandbox

SLOW: dict[str, str] = {
    # node id prefix: why it is long. Marked ``slow``: the default suite
    # (``python -m pytest``) deselects them, ``nox -s slow`` and CI (once, not per Python)
    # run them: ``python -m pytest -m slow``.
    "tests/ray/": "starts a local Ray cluster per worker and agent subprocesses",
    **dict.fromkeys(
        (
            "tests/cli/test_cli_bench.py::test_the_default_is_the_trivial_workload_on_both_clocks",
            "tests/cli/test_cli_bench.py::test_a_sample_of_the_trivial_tool_is_at_least_one_batch",
            "tests/cli/test_cli_bench.py::test_the_text_report_labels_both_clocks_and_the_workload",
            "tests/cli/test_cli_bench.py::test_examples_run_the_example_tools_on_a_generated_batch",
        ),
        "runs the benchmark command's real workloads",
    ),
    "tests/cli/test_cli.py::test_the_ctrl_c_tests_pass_when_pytest_starts_with_sigint_ignored": (
        "runs the Ctrl-C tests again in a pytest subprocess"
    ),
    "tests/suite/": "hangs on purpose in pytest subprocesses, until each time limit",
    "tests/docs/test_docs.py::test_the_site_builds_strictly": "builds the whole site",
    "tests/core/test_return_values.py::test_text_passes_mypy_strict": "runs mypy",
    # The longest property suites (hundreds of examples each).
    "tests/tools/test_schema.py::test_property_validate_args_is_total": "300 examples",
    "tests/tools/test_schema_dsl.py::test_property_a_one_field_mutation": "300 examples",
    "tests/tools/test_structured.py::test_property_one_wrong_type": "300 examples",
    "tests/tools/test_structured.py::test_property_validation_never_raises": "300 examples",
    "tests/providers/test_providers_strict.py::test_any_valid_value_survives": "150 examples",
    "tests/batch/test_resource_keys.py::test_keyed_batches_on_asyncio_longer": (
        "800 stateful examples on the asyncio driver"
    ),
}
"""The groups the default suite leaves out, by node id prefix (docs/contributing.md)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    slow = pytest.mark.slow
    for item in items:
        if item.nodeid.startswith(tuple(SLOW)):
            item.add_marker(slow)


@pytest.fixture
def sigint_default() -> Iterator[None]:
    """SIGINT raises ``KeyboardInterrupt`` during the test, as in an interactive shell.

    A test that sends itself SIGINT must not inherit pytest's disposition: started in the
    background by a script (``&``, ``nohup``), pytest runs with SIGINT ignored.
    """
    with _sigint(signal.default_int_handler):
        yield


@pytest.fixture
def sigint_ignored() -> Iterator[None]:
    """SIGINT is ignored during the test, as in a script's background job."""
    with _sigint(signal.SIG_IGN):
        yield


@contextlib.contextmanager
def _sigint(handler: Any) -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A directory filled with the bundled example project, for the example tools."""
    sandbox = tmp_path / "root"
    sandbox.mkdir()
    fill_sandbox(sandbox)
    return sandbox


# Hypothesis: no per-example deadline. A test's time is bounded by its time limit
# (pytest-timeout, tests/time_limits.py), and speed is measured in benchmarks/, never
# asserted: on a loaded machine (or beside another xdist worker) a deadline only flakes.
settings.register_profile("suite", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))


@pytest.fixture(params=DRIVERS, ids=str)
def driver(request: pytest.FixtureRequest) -> Driver:
    """The batch driver a scenario runs on: trio (``toolnursery``) or the native asyncio
    driver (``toolnursery.aio``), each on a virtual clock (``tests/drivers.py``)."""
    driver: Driver = request.param
    return driver
