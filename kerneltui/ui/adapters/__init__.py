"""Small read-only views of core data (history, asm, profile) in the shapes the widgets draw.

Each adapter is the one place that knows where a core part keeps its data; widgets only see the
dataclasses in :mod:`kerneltui.ui.ports`, so tests drive them with fixed data.
"""
