"""The contract between a worker and its parent: what both sides import.

``protocol`` frames and seals the messages, ``replies`` types the ops' replies, ``wire`` describes
tensors in shared memory, ``start`` says how a worker is started (its entry module, its variables,
what it imports while warm), ``seeds`` names the seeds of a case's checks. Pure: no torch, nothing of
either side (``tests/unit/test_worker_boundary.py``).
"""
