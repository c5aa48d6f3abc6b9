"""Example tools that do real file work, confined to one root directory.

Six tools, each a raw :class:`~toolnursery.ToolDefinition` that declares its JSON
Schema and validates its own arguments:

* ``read_file`` (keyed) — a text file's contents, truncated at ``max_bytes``.
* ``list_dir`` (keyed) — a directory's entries, directories marked with ``/``.
* ``search_text`` (keyed) — lines containing a literal text, under a path.
  A plain ``def`` body: the registry runs it in a worker thread, and it polls the
  call's signal between files.
* ``write_file`` (keyed) — create or replace a text file.
* ``move_path`` (exclusive) — move a file or directory to a new path.
* ``sleep`` (parallel) — wait, cancellably; useful to watch scheduling.

The file tools name the resources each call touches (``concurrency_keys``), on the
root-relative path resolved exactly as the body resolves it:

* ``read_file(p)`` reads ``file:p``;
* ``list_dir(d)`` and ``search_text(d)`` *write* ``tree:d`` — a marker, not a real
  write: it conflicts with every write that reads it;
* ``write_file(p)`` writes ``file:p``, reads ``tree:a`` for ``p`` and each of its
  ancestors, and takes ``file:a`` for each ancestor directory (a write when the
  directory does not exist yet, since the call creates it; a read otherwise).

So a write waits for earlier reads of its file and for earlier listings and searches
of any directory above it, and later ones wait for it, while writes of different files
overlap each other and reads of other files. The price of the marker: two listings or
searches of the same directory run one after the other. A path that does not resolve
inside the root, or invalid arguments, make the classifier raise: the call is
exclusive (it fails without touching anything, so the barrier costs little, and no
key is ever computed from a path the body would not use). ``move_path`` touches two
paths and two directory listings, and is simply exclusive.

Each tool also presents itself to a UI (``present_call`` / ``present_result``): the
reads as generic cards of kind ``read`` / ``search`` with the file as a location,
``write_file`` as a diff card (the result's diff has the old text when the file was a
small text file — the before-image travels in the result's ``meta``), ``sleep`` as a
terminal card. The presenters are pure functions of the arguments and the result, and
answer ``None`` (the generic fallback) for arguments or ``meta`` they do not recognize,
so a UI can replay old logs with them.

Every path argument is resolved against the root, following symlinks, *before* any
file is opened: a path that ends up outside the root (``..``, an absolute path
elsewhere, a symlink pointing out) fails with :class:`OutsideRootError` and nothing
outside the root is read or written. The check is made once per call, so the tools
are a demonstration, not a security boundary against a concurrent attacker who can
swap directories for symlinks mid-call.

The tools read and write regular files and list directories, nothing else: a FIFO, a
socket or a device inside the root fails with ``NOT_A_REGULAR_FILE`` (files are opened
non-blocking and checked on the open descriptor, so nothing can hold a worker thread
past the call's deadline). Every other operating-system failure is ``OS_ERROR``
(``NOT_FOUND`` for a missing path); error messages name paths relative to the root,
never the host path. All failures are :class:`~toolnursery.FileToolError` (or its
subclass :class:`OutsideRootError`). A file name that is not UTF-8 is shown with
``\\xNN`` escapes (``caf\\xe9.txt``), and a path argument written that way names that
file.

Example::

    registry = example_registry("/path/to/project")
    calls = [ToolCall("c1", "read_file", '{"path": "README.md"}')]
    results = await run_tool_calls(registry, calls)
"""

from __future__ import annotations

from ._core._errors import OutsideRootError as OutsideRootError
from ._examples._sandbox import fill_sandbox as fill_sandbox
from ._examples._toolset import example_registry as example_registry
from ._examples._toolset import example_tools as example_tools

__all__ = [
    "OutsideRootError",
    "example_registry",
    "example_tools",
    "fill_sandbox",
]

# This module is the functions' public home (trio's fixup_module_metadata): help(),
# reprs and the API reference name it, not the private module. OutsideRootError
# keeps toolnursery's error module as its home: the error tree lives there.
for _public in (example_registry, example_tools, fill_sandbox):
    _public.__module__ = __name__
del _public
