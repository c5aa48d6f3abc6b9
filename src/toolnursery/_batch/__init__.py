"""A model's batch of calls (private; imports the layers below it).

The scheduler's entry points, the driver that walks calls in model order, admission
(the cap and waiting), resource-key conflicts, intake of each call's arguments, the
durable recorder and resuming from a log.
"""

__all__: list[str] = []
