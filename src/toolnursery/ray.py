"""Run tool bodies on a Ray cluster: :func:`ray_tool` places a definition's body there.

Install the extra (``pip install -e '.[ray]'`` in a checkout), connect (``ray.init()`` for a
local cluster, ``ray.init(address=...)`` for a real one) and register
``ray_tool(definition, ...)`` instead of ``definition``. Only the body moves: the
argument snapshot, policies, guards, classification, model order and the recorder
stay in the agent's process, and a remote call ends as a local one would — its
result, ``ABORTED`` after a batch abort, ``TOOL_TIMEOUT`` after a deadline — or with
a :class:`RemoteToolError` code when Ray lost the worker (``REMOTE_WORKER_DIED``),
the node (``REMOTE_NODE_DIED``), or could not place it (``REMOTE_UNAVAILABLE``, also
when this process is not connected to Ray). A placed body's return makes exactly the
result it makes locally (it is rendered on the worker by the same code). A deadline
counts from submission, worker start-up included: :func:`warm` starts the workers
before the calls. See ``docs/ray.md``.
"""

from __future__ import annotations

try:
    import ray as _ray  # the Ray package itself: absolute imports never find this module
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "toolnursery.ray needs Ray: install the extra with pip install -e '.[ray]'"
    ) from _exc

from ._core._errors import REMOTE_NODE_DIED as REMOTE_NODE_DIED
from ._core._errors import REMOTE_RESULT_NOT_ENCODABLE as REMOTE_RESULT_NOT_ENCODABLE
from ._core._errors import REMOTE_UNAVAILABLE as REMOTE_UNAVAILABLE
from ._core._errors import REMOTE_WORKER_DIED as REMOTE_WORKER_DIED
from ._core._errors import RemoteToolError as RemoteToolError
from ._core._homes import fixup_module_metadata as _fixup_module_metadata
from ._ray._fleet import FleetUsage as FleetUsage
from ._ray._fleet import fleet_usage as fleet_usage
from ._ray._place import ray_tool as ray_tool
from ._ray._place import warm as warm
from ._ray._remote import RemoteContext as RemoteContext

del _ray

__all__ = [
    "REMOTE_NODE_DIED",
    "REMOTE_RESULT_NOT_ENCODABLE",
    "REMOTE_UNAVAILABLE",
    "REMOTE_WORKER_DIED",
    "FleetUsage",
    "RemoteContext",
    "RemoteToolError",
    "fleet_usage",
    "ray_tool",
    "warm",
]

_fixup_module_metadata(__name__, __all__)
