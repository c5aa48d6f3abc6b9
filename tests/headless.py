"""Headless Chromium, run as a command: screenshots, the DOM, PNGs read back as pixels.

The flags keep a run self-contained: no sandbox (CI runs as root), no GPU, no
background traffic, and a fresh profile each time.
"""

from __future__ import annotations

import struct
import subprocess
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
)


@dataclass(frozen=True)
class Image:
    """A decoded screenshot: ``rows[y]`` holds the row's pixels as packed RGB bytes."""

    width: int
    height: int
    rows: list[bytes]

    def luminance_variance(self) -> float:
        """The variance of the pixels' luminance (0: one flat colour, a blank page)."""
        values = [
            0.299 * row[i] + 0.587 * row[i + 1] + 0.114 * row[i + 2]
            for row in self.rows
            for i in range(0, len(row), 3)
        ]
        mean = sum(values) / len(values)
        return sum((v - mean) ** 2 for v in values) / len(values)

    def count(self, colour: str, tolerance: int = 24) -> int:
        """How many pixels are within ``tolerance`` of ``colour`` (``"#rrggbb"``) per channel."""
        r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
        return sum(
            abs(row[i] - r) <= tolerance
            and abs(row[i + 1] - g) <= tolerance
            and abs(row[i + 2] - b) <= tolerance
            for row in self.rows
            for i in range(0, len(row), 3)
        )


def read_png(path: Path) -> Image:
    """Decode an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium writes)."""
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG")
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", data[16:29])
    if depth != 8 or colour not in (2, 6) or interlace != 0:
        raise ValueError(f"{path}: not an 8-bit RGB(A) non-interlaced PNG")
    chunks, offset = [], 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        if data[offset + 4 : offset + 8] == b"IDAT":
            chunks.append(data[offset + 8 : offset + 8 + length])
        offset += 12 + length
    raw = zlib.decompress(b"".join(chunks))
    bpp = 3 if colour == 2 else 4
    stride = width * bpp
    previous = bytearray(stride)
    rows = []
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, previous, strict=True))
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = previous[i]
                c = previous[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line) if bpp == 3 else bytes(b for i, b in enumerate(line) if i % 4 != 3))
        previous = line
    return Image(width, height, rows)


class Chromium:
    """Runs the binary once per page, each time with a fresh profile."""

    def __init__(self, binary: str) -> None:
        self.binary = binary

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
            return subprocess.run(
                [self.binary, *FLAGS, f"--user-data-dir={profile}", *args],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )

    def screenshot(self, url: str, out: Path, width: int, height: int, scale: float = 1) -> Image:
        done = self._run(
            f"--window-size={width},{height}",
            f"--force-device-scale-factor={scale}",
            "--virtual-time-budget=5000",
            f"--screenshot={out}",
            url,
        )
        assert out.exists(), done.stderr
        return read_png(out)

    def dom(self, url: str, width: int | None = None, height: int | None = None) -> str:
        """The page's DOM once its scripts ran (laid out in a ``width`` × ``height``
        window when given: what a script measured there is in it)."""
        size = () if width is None else (f"--window-size={width},{height or width}",)
        done = self._run(*size, "--virtual-time-budget=5000", "--dump-dom", url)
        assert done.returncode == 0, done.stderr
        return done.stdout
