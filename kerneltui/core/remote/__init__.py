"""Workers away from this machine: ``ssh`` (a GPU host over SSH) and ``ray_runner`` (a Ray cluster).

Both reuse the local worker machinery: the SSH runner starts the same worker process on the remote
host and speaks the same protocol over ssh's pipes; a Ray task runs a whole verification with local
workers (child processes) on the node that holds its GPU.
"""
