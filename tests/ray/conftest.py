"""The local Ray cluster the tests under ``tests/ray`` share (one per session)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Bind the cluster to loopback (Ray's switch for a single-machine cluster); must be
# set before Ray is imported.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def cluster() -> Iterator[str]:
    """A local 2-CPU cluster for the session; yields its address for other agents."""
    ray = pytest.importorskip(
        "ray", reason="Ray is not installed: install the extra, pip install -e '.[ray]'"
    )
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(TESTS), path) if p)
    context = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield context.address_info["address"]
    finally:
        ray.shutdown()
        if path is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = path
