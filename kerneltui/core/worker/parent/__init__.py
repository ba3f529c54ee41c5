"""The parent's side of a worker: runs in the front end or the engine, never in a worker.

``runner`` starts a worker process (here, boxed; over SSH; in Ray's workers), ``process`` is the
parent's handle on one (requests, replies, faults), ``pool`` keeps the next ones warm. Nothing here
imports torch, triton or the child side (``tests/unit/test_worker_boundary.py``).
"""
