"""The child's side of a worker: runs inside the sandboxed worker process, never in the parent.

``serve`` is the process's entry point (``python -m kerneltui.core.worker.child.serve``); ``state``
holds what the worker keeps between requests; the ops (``ops_*``, gathered by ``ops``) serve the
parent's requests; ``runtime``, ``verdicts``, ``evidence``, ``integrity`` and ``timing`` are the
harness they run on. Nothing here imports the rungs, the loop, the agent or the UI
(``tests/unit/test_worker_boundary.py``).
"""
