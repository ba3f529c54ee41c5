"""Whole problem sets checked at once: ``kerneltui suite DIR``.

``discover`` finds the problems and candidates of a KernelBench level folder, a GPU MODE problems
folder or a folder of native tasks; ``record`` keeps each verified item in a results file beside
the suite so an interrupted run resumes; ``score`` computes KernelBench's fast_p and geometric-mean
speedup and GPU MODE's per-problem score and ranking; ``run`` verifies the items here (one slot per
GPU) or on a Ray cluster; ``table`` prints the result.
"""
