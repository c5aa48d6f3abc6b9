"""Every framework bridge against the framework's own tool execution, one table each.

Runs ``bench_bridges_langgraph.py`` (LangGraph's ``ToolNode`` against
``toolnursery.langgraph.ToolBatchNode`` in the same graph) and
``bench_bridges_others.py`` (pydantic-ai, openai-agents and smolagents against their
bridges): 10 calls per turn, five pass-through hooks on ours, CPU time, interleaved
samples, each framework measured in one process. Needs the extras ``langgraph``,
``pydantic-ai``, ``openai-agents`` and ``smolagents`` (all in ``test``).

Run: ``python benchmarks/bench_bridges.py`` (``--quick``: fewer samples).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = ("bench_bridges_langgraph.py", "bench_bridges_others.py")


def main() -> int:
    extra = [arg for arg in sys.argv[1:] if arg == "--quick"]
    status = 0
    for script in SCRIPTS:
        print(f"== {script}", flush=True)
        status |= subprocess.run([sys.executable, str(HERE / script), *extra]).returncode
    return status


if __name__ == "__main__":
    raise SystemExit(main())
