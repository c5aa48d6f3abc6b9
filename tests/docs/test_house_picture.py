"""The layers picture in docs/design.md is drawn from the code and kept true."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "house-svg"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_committed_picture_matches_the_code() -> None:
    checked = run("--check")
    assert checked.returncode == 0, checked.stderr


def test_no_layer_imports_a_layer_above_it(tmp_path: Path) -> None:
    drawn = tmp_path / "house.svg"
    assert run(str(drawn)).returncode == 0
    svg = drawn.read_text()
    assert 'class="arrow up"' not in svg, "an import runs up the layers (a red arrow)"
    assert "_pipeline/" in svg
    assert "_core/" in svg


def test_a_stale_picture_is_refused(tmp_path: Path) -> None:
    stale = tmp_path / "house.svg"
    stale.write_text("<svg/>")
    checked = run("--check", str(stale))
    assert checked.returncode == 1
    assert "out of date" in checked.stderr
