"""Loaders from each task format to :class:`kerneltui.core.task.Task`."""
