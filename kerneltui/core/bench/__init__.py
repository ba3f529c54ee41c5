"""The benchmark domain: how a kernel is timed, and what the times mean.

    stats.py         statistics of raw samples, the adaptive stopping rule, ``BenchSettings``, the
                     graph-mode rule, the side-work detector and its control cadence (the worker
                     reads the stopping rule and the cadence from here too)
    report.py        raw samples to the benchmark rung's verdict (speedups, aggregate, failures)
    roofline.py      a time against the device's roofs (floors, % of roofline)
    device_peaks.py  the device's measured peaks, keyed and cached on disk
    compare.py       is B faster than A: ABBA blocks to a ratio, its interval and the verdict

The worker side of the benchmark lives with the other worker ops in ``core/worker/child/``: the timing
protocol (``timing``: flush, fresh inputs, events, side-work check), driven by ``ops_bench`` (the
kernel) and ``ops_judge_bench`` (the baselines, the input slots), and ``recheck``, ``peaks``,
``device_info``; the rung and its batch driver stay with the other rungs (``core/rungs/benchmark.py``,
``core/rungs/bench_series.py``). Nothing here imports torch at module level or Textual: the parent
computes every number it reports.
"""
