"""The suite's own time limits (pytest-timeout, with tests/time_limits.py as its timer): a
hang fails with the test's name.

Each case runs a tiny test file in a pytest subprocess, with the plugin as the suite
loads it, and one-second limits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TESTS = Path(__file__).parents[1]

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="POSIX only")

HANGS = """
import threading
import time

import pytest
import trio
from hypothesis import given, settings, strategies as st


@pytest.mark.timeout(1)
def test_sync_sleeps():
    time.sleep(1000)


@pytest.mark.timeout(1)
def test_sync_waits_for_a_thread():
    never = threading.Event()
    worker = threading.Thread(target=never.wait, daemon=True)
    worker.start()
    worker.join()


@pytest.mark.timeout(1)
def test_sync_hangs_inside_trio_run():
    trio.run(trio.sleep_forever)


@pytest.mark.timeout(1)
async def test_trio_sleeps_forever():
    await trio.sleep_forever()


@pytest.mark.timeout(1)
async def test_trio_never_yields():
    while True:
        time.sleep(0.01)


@pytest.mark.timeout(1)
@settings(deadline=None, max_examples=3)
@given(st.integers())
async def test_trio_property_hangs(n):
    await trio.sleep_forever()


def test_trio_still_runs_after_the_hangs():
    assert trio.run(trio.sleep, 0) is None
"""

DOCS = """
# A page

```python
import time

time.sleep(1000)
```
"""

ENDS_THE_RUN = {
    "test_sigalrm_is_masked": (
        """
        import signal
        import time

        import pytest


        @pytest.mark.timeout(1)
        def test_sigalrm_is_masked():
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            time.sleep(1000)
        """,
        "still running after 3 s and could not be interrupted",
    ),
    "test_shielded_inside_trio_run": (
        """
        import pytest
        import trio


        @pytest.mark.timeout(1)
        def test_shielded_inside_trio_run():
            async def stuck():
                with trio.CancelScope(shield=True):
                    await trio.sleep_forever()

            trio.run(stuck)
        """,
        "still running after 2 s and did not unwind when its trio run was cancelled",
    ),
    "test_trio_waits_for_a_thread_it_cannot_cancel": (
        """
        import threading

        import pytest
        import trio


        @pytest.mark.timeout(1)
        async def test_trio_waits_for_a_thread_it_cannot_cancel():
            await trio.to_thread.run_sync(threading.Event().wait)
        """,
        "still running after 4 s and did not unwind when its trio run was cancelled",
    ),
}


def run_pytest(tmp_path: Path, files: dict[str, str]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\ntrio_mode = true\naddopts = -ra -p no:cacheprovider -p no:xdist\n"
    )
    (tmp_path / "conftest.py").write_text(
        "from sybil import Sybil\n"
        "from sybil.parsers.markdown import PythonCodeBlockParser\n"
        'pytest_plugins = ["time_limits"]\n'
        "pytest_collect_file = Sybil(\n"
        '    parsers=[PythonCodeBlockParser()], patterns=["*.md"]\n'
        ").pytest()\n"
    )
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), *filter(None, [env.get("PYTHONPATH")])])
    env["PYTEST_TIMEOUT"] = "1"  # pytest-timeout's default, for the docs' example
    env["COLUMNS"] = "400"  # the summary's lines whole
    return subprocess.run(
        [sys.executable, "-m", "pytest", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=100,  # each hang ends in a few seconds; this bounds a broken plugin
        cwd=tmp_path,
        env=env,
        check=False,
    )


@pytest.mark.timeout(110)
def test_every_kind_of_hanging_test_fails_with_its_name(tmp_path: Path) -> None:
    completed = run_pytest(tmp_path, {"test_hangs.py": HANGS, "page.md": DOCS})
    out = completed.stdout
    assert completed.returncode == 1, out + completed.stderr
    failed = {
        line.split(" ")[1].split("::")[-1]
        for line in out.splitlines()
        if line.startswith("FAILED ") and "took longer than" in line
    }
    assert failed == {
        "test_sync_sleeps",
        "test_sync_waits_for_a_thread",
        "test_sync_hangs_inside_trio_run",
        "test_trio_sleeps_forever",
        "test_trio_never_yields",
        "test_trio_property_hangs",
        "line:4,column:1",  # the docs page's example
    }, out
    assert "1 passed" in out  # and no hang broke trio for the tests after it


@pytest.mark.parametrize("name", sorted(ENDS_THE_RUN))
@pytest.mark.timeout(60)
def test_a_hang_that_cannot_be_interrupted_ends_the_run_naming_the_test(
    tmp_path: Path, name: str
) -> None:
    source, how = ENDS_THE_RUN[name]
    completed = run_pytest(tmp_path, {"test_stuck.py": source})
    assert completed.returncode == 1, completed.stdout + completed.stderr
    expected = f"test_stuck.py::{name}: the test {how}: ending the test run (exit status 1)"
    assert expected in completed.stderr, completed.stderr
    assert "(most recent call first)" in completed.stderr  # every thread's traceback
