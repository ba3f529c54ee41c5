"""Worker processes: the only place candidate code is imported and run. Split by where code runs:

``parent``    runs in the front end or the engine: ``runner`` starts a worker (here, over SSH, in
              Ray), ``process`` is the parent's handle on one, ``pool`` keeps the next ones warm;
``child``     runs inside the sandboxed worker process: ``serve`` is its entry point, the ops
              (``ops_*``) serve the parent's requests on the harness around them;
``contract``  what both import: the framed protocol (``protocol``), the replies' types (``replies``),
              tensors in shared memory (``wire``), how a worker starts (``start``), the case seeds.

The parent never imports the child side, nor torch; the child never imports the rungs, the loop,
the agent or the UI (``tests/unit/test_worker_boundary.py``).
"""
