"""Developer sessions: ``nox -s tests lint typecheck docs bench``."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "lint", "typecheck"]


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite."""
    session.install("-e", ".[test]")
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and format --check."""
    session.install("ruff")
    session.run("ruff", "check", "src", "tests", "benchmarks")
    session.run("ruff", "format", "--check", "src", "tests", "benchmarks")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the package."""
    session.install("-e", ".[typing]")
    session.run("mypy")


@nox.session
def docs(session: nox.Session) -> None:
    """Check that the README quickstart and the docs' examples run."""
    session.install("-e", ".[test]")
    session.run("pytest", "tests/test_readme.py")


@nox.session
def bench(session: nox.Session) -> None:
    """Run the benchmarks (prints per-call µs and ratios to a bare trio nursery)."""
    session.install("-e", ".")
    session.run("python", "benchmarks/bench_pipeline.py")
    session.run("python", "benchmarks/bench_scheduler.py")
    session.install("-e", ".[mcp]")
    session.run("python", "benchmarks/bench_mcp.py")


@nox.session
def mcp_conformance(session: nox.Session) -> None:
    """The MCP conformance suite's server scenarios against ``toolnursery serve --http``.

    Installs Node 22 and the suite from the npm registry into a cache directory.
    """
    session.install("-e", ".[mcp]")
    session.run("python", "scripts/mcp_conformance.py", *session.posargs)
