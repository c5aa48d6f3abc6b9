"""Pictures of a recorded batch (private; reads the batch's log events).

The timeline model (:mod:`._model`: a log's events as one row per call, on one time
axis) and its drawing as SVG or interactive HTML (:mod:`._draw`).
"""

__all__: list[str] = []
