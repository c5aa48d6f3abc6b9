"""The values that cross every boundary (private; the lowest layer).

Errors and result codes, content blocks and results, lossless JSON and the JSON form of
returned values, cancel signals, policy decisions, progress reports, statistics,
argument reading, result building (outcomes), exception groups, and the views of one
call that hooks and bodies see.
Nothing here imports another layer of the package.
"""

__all__: list[str] = []
