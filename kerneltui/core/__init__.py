"""The headless core: tasks, the verification loop, workers, rungs, history, sessions, agent.

Nothing below this package imports Textual, and nothing here imports torch or triton at module
level: candidate code and the GPU stack live in worker processes (see ``core.worker``).
"""
