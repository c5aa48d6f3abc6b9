"""One call through the policy pipeline (private; imports ``_core`` and ``_tools``).

The registry and its scopes, the plan compiler and the compiled plans, the call
record, the stages (prepare, dispatch, finalize), the waterfalls, deadlines and the
shipped policies (timeout, retry, OpenTelemetry).
"""

__all__: list[str] = []
