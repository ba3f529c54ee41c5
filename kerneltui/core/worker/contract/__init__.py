"""The wire contract between a worker and its parent: what both sides import.

``protocol`` frames and seals the messages, ``replies`` types the ops' replies, ``wire`` describes
tensors in shared memory. Pure: no torch at import, nothing of either side.
"""
