"""Worker processes: the only place candidate code is imported and run.

``child`` is the process's entry point; ``process`` is the parent's handle on one worker;
``pool`` keeps a warm worker ready; ``runner`` decides where workers start (locally, over SSH, …).
The same framed-JSON protocol (``protocol``) runs over the worker's stdin/stdout everywhere.
"""
