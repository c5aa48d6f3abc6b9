"""Developer sessions: ``nox -s tests lint typecheck docs bench`` (``matrix`` for every Python).

``tests`` is the default suite (``python -m pytest``: pytest-xdist, the long groups left
out); ``slow`` runs those groups (tests/conftest.py ``SLOW``: Ray, the benchmark command's
workloads, the time-limit hangs, the site build, the longest property suites).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess

import nox

nox.options.sessions = ["tests", "lint", "typecheck"]

PYTHONS = ["3.11", "3.12", "3.13"]


def _find_pyenv_pythons() -> None:
    """Put pyenv's interpreters of ``PYTHONS`` on PATH when ``pythonX.Y`` does not run
    (a pyenv shim for a version that is installed but not selected fails)."""
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = []
    for version in PYTHONS:
        command = shutil.which(f"python{version}")
        if command and subprocess.run([command, "-c", ""], capture_output=True).returncode == 0:
            continue
        folders = sorted(glob.glob(os.path.join(root, "versions", f"{version}.*", "bin")))
        if folders:
            found.append(folders[-1])
    if found:
        os.environ["PATH"] = os.pathsep.join([*found, os.environ.get("PATH", "")])


_find_pyenv_pythons()


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite."""
    session.install("-e", ".[test]")
    session.run("pytest", *session.posargs)


@nox.session
def slow(session: nox.Session) -> None:
    """The long groups the default suite leaves out (``pytest -m slow``)."""
    session.install("-e", ".[test]")
    session.run("pytest", "-m", "slow", *session.posargs)


@nox.session(python=PYTHONS)
def matrix(session: nox.Session) -> None:
    """The test suite on each supported Python (``nox -s matrix-3.13`` for one)."""
    session.install("-e", ".[test]")
    session.run("python", "-c", "import platform; print('Python', platform.python_version())")
    session.run("pytest", "-q", "-p", "no:cacheprovider", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and format --check."""
    session.install("-e", ".[lint]")
    paths = ("src", "tests", "benchmarks", "conftest.py", "docs_sphinx_roles.py", "docs/_gen")
    session.run("ruff", "check", *paths)
    session.run("ruff", "format", "--check", *paths)


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the package; pyright's check of the public API's types."""
    session.install("-e", ".[typing]")
    session.run("mypy")
    session.run("python", "scripts/verifytypes")


@nox.session
def docs(session: nox.Session) -> None:
    """Run every example of docs/ and the README, then build the site in strict mode."""
    session.install("-e", ".[test,docs]")
    session.run("pytest", "-p", "no:cacheprovider", "docs", "README.md")
    site_dir = session.create_tmp() + "/site"
    session.run(
        "mkdocs", "build", "--strict", "--site-dir", site_dir, env={"NO_MKDOCS_2_WARNING": "1"}
    )


@nox.session
def browser(session: nox.Session) -> None:
    """Build the site, then open its pages and the HTML timeline in headless Chromium.

    Needs Chromium on PATH (Debian: ``apt-get install chromium``) or in
    ``TOOLNURSERY_CHROMIUM``; without it the tests are skipped, saying so.
    """
    session.install("-e", ".[test,docs]")
    site_dir = session.create_tmp() + "/site"
    session.run(
        "mkdocs", "build", "--strict", "--quiet", "--site-dir", site_dir,
        env={"NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    session.run(
        "pytest", "-p", "no:cacheprovider", "tests/browser", *session.posargs,
        env={"TOOLNURSERY_BROWSER": "1", "TOOLNURSERY_BROWSER_SITE": site_dir},
    )  # fmt: skip


@nox.session
def bench(session: nox.Session) -> None:
    """Run the benchmarks (prints per-call µs and ratios to a bare trio nursery)."""
    session.install("-e", ".")
    session.run("python", "benchmarks/bench_pipeline.py")
    session.run("python", "benchmarks/bench_scheduler.py")
    session.run("python", "benchmarks/bench_peers.py")
    session.install("-e", ".[langgraph,pydantic-ai,openai-agents,smolagents]")
    session.run("python", "benchmarks/bench_bridges.py", "--quick")
    session.install("-e", ".[ray]")
    session.run("python", "benchmarks/bench_ray.py", "--quick")
    session.install("-e", ".[mcp]")
    session.run("python", "benchmarks/bench_mcp.py")


@nox.session
def mcp_conformance(session: nox.Session) -> None:
    """The MCP project's conformance suite against ``toolnursery serve --http``.

    Needs ``npm`` and the npm registry: Node 22 and the suite are installed into
    ``.cache/`` on the first run. Arguments go to the script (``-- --scenario ping``).
    """
    session.install("-e", ".[mcp]")
    session.run("python", "scripts/mcp-conformance", *session.posargs)


@nox.session
def faults(session: nox.Session) -> None:
    """The fault matrix and the log state machine with a bigger hypothesis budget."""
    session.install("-e", ".[test]")
    session.env["TOOLNURSERY_LOG_EXAMPLES"] = "60"
    session.run("pytest", "tests/batch/test_fault_matrix.py", "tests/batch/test_log_machine.py")
