"""``python -m toolnursery`` and the ``toolnursery`` console script."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ._cli._main import main as _main

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``toolnursery`` command with ``argv`` (``sys.argv[1:]`` when ``None``).

    Returns:
        The process exit code.
    """
    return _main(argv)


if __name__ == "__main__":
    sys.exit(main())
