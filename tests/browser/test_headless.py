"""The PNG reader the browser tests judge screenshots with (runs in the default run)."""

from __future__ import annotations

import random
import struct
import zlib
from pathlib import Path

import pytest

from headless import Image, read_png


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def _encode(rows: list[bytes], width: int, bpp: int) -> bytes:
    """A PNG whose row y uses filter y % 5, so every filter is decoded."""
    stride = width * bpp
    previous = bytes(stride)
    raw = bytearray()
    for y, row in enumerate(rows):
        kind = y % 5
        out = bytearray()
        for i in range(stride):
            a = row[i - bpp] if i >= bpp else 0
            b = previous[i]
            c = previous[i - bpp] if i >= bpp else 0
            predictor = (0, a, b, (a + b) >> 1, _paeth(a, b, c))[kind]
            out.append((row[i] - predictor) & 0xFF)
        raw += bytes([kind]) + out
        previous = row

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, len(rows), 8, 2 if bpp == 3 else 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(bytes(raw)))
        + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize("bpp", [3, 4])
def test_every_filter_decodes_to_the_pixels(tmp_path: Path, bpp: int) -> None:
    rng = random.Random(bpp)
    width = 7
    rows = [bytes(rng.randrange(256) for _ in range(width * bpp)) for _ in range(10)]
    path = tmp_path / "x.png"
    path.write_bytes(_encode(rows, width, bpp))
    image = read_png(path)
    assert (image.width, image.height) == (width, 10)
    rgb = [bytes(b for i, b in enumerate(row) if bpp == 3 or i % 4 != 3) for row in rows]
    assert image.rows == rgb


def test_a_blank_page_has_no_variance_and_a_colour_is_counted() -> None:
    blank = Image(2, 2, [b"\xff" * 6, b"\xff" * 6])
    assert blank.luminance_variance() == 0
    marked = Image(2, 2, [b"\xff\xff\xff\x2e\x9d\x5b", b"\xff" * 6])
    assert marked.luminance_variance() > 0
    assert marked.count("#2e9d5b") == 1
    assert marked.count("#ffffff") == 3


def test_not_a_png_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.png"
    path.write_bytes(b"GIF89a")
    with pytest.raises(ValueError, match="is not a PNG"):
        read_png(path)
