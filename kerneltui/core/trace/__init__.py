"""Intra-kernel tracing: named regions timed inside a kernel, per CTA.

The device side writes a buffer the harness allocates (``kerneltui/data/kerneltui_trace.cuh`` for
CUDA C++, ``kerneltui.ktrace.triton`` for Triton); this package reads it back in the parent:
``buffer`` (the record layout and the recorded-file format), ``stats`` (per-region statistics),
``chrome`` (Perfetto / Chrome trace JSON), ``timeline`` (text cells per SM) and ``summary`` (the
region table as text, for the rung row and the agent). Nothing here imports torch or Textual.
"""
