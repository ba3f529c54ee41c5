"""Context search on a cutlass-sized folder: index build, refresh and query latency.

Generates a folder of N text files shaped like a cutlass clone (C++ headers, CUDA sources, Python,
Markdown; identifiers from the CuTe/CUTLASS vocabulary, sizes log-normal around a few kB), indexes it
with kerneltui's context search and times:

- the cold build (first use of a new folder),
- a refresh with nothing changed and one after touching 50 files (a session runs this in the
  background when it starts; searches do not wait for it),
- queries as the search_context tool runs them (median and worst of several), a query of only very
  common words, and the first query of a new process on the existing index.

Usage: python bench/context_search.py [--files 30000] [--mean-kb 5] [--dir DIR] [--keep]
Prints a table and appends it to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kerneltui.core.agent.search import ContextIndex  # noqa: E402

VOCAB = """cute layout make_layout make_shape make_stride Tensor make_tensor local_tile local_partition
TiledMMA TiledCopy make_tiled_copy make_tiled_mma SM90_64x128x16_F32BF16BF16_SS GMMA wgmma warpgroup
arrive fence commit_group wait_group cp_async cp_async_wait SM90_TMA_LOAD SM90_TMA_STORE tma_descriptor
make_tma_copy ClusterShape TileShape KernelTmaWarpSpecialized CollectiveMma CollectiveEpilogue
PipelineTmaAsync barrier mbarrier ClusterBarrier smem_ptr gmem_ptr Swizzle composition complement
logical_divide zipped_divide tiled_divide coalesce rank depth size cosize Int Underscore Step
ldmatrix stmatrix mma_sync half_t bfloat16_t float_e4m3_t tfloat32_t uint128_t alignas
__syncthreads __shfl_xor_sync threadIdx blockIdx blockDim gridDim template typename constexpr
CUTLASS_DEVICE CUTLASS_HOST_DEVICE static_assert decltype auto return if for namespace struct
occupancy register spill shared memory bank conflict coalesced vectorized predicate epilogue
pipeline stage producer consumer warp specialization persistent scheduler split_k stream_k
GemmUniversal ArchTag OpClassTensorOp LayoutA LayoutB ElementAccumulator ElementCompute
""".split()
WORDS = """the a of and to in is for that with on by this we be are as it an or from at which can
tile thread block warp element value index shape stride mode copy load store compute result matrix
""".split()


def vocabulary(rng: random.Random, size: int = 40_000) -> list[str]:
    """Words ordered by frequency rank: English glue first, the CUTLASS/CuTe terms spread over ranks
    50-5000 (common but not everywhere), synthetic identifiers for the long tail."""
    syllables = ["ka", "to", "ri", "mu", "ne", "sa", "lo", "pi", "de", "gu", "va", "zo", "bel", "tor", "mex",
                 "qua", "dri", "fen", "lis", "gro"]
    tail: list[str] = []
    seen: set[str] = set()
    while len(tail) < size:
        word = "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))
        if rng.random() < 0.3:
            word += "_" + "".join(rng.choice(syllables) for _ in range(rng.randint(1, 3)))
        if word not in seen:
            seen.add(word)
            tail.append(word)
    words = list(WORDS) + tail
    for term in VOCAB:
        words.insert(rng.randint(50, 5000), term)
    return words


def generate(folder: Path, files: int, mean_kb: float, seed: int = 0) -> int:
    import numpy as np

    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    words = np.array(vocabulary(rng))
    ranks = np.arange(1, len(words) + 1)
    weights = 1.0 / ranks ** 1.07  # Zipf's law, as in natural text and source code
    weights /= weights.sum()
    kinds = [(".hpp", 0.45), (".h", 0.1), (".cu", 0.15), (".py", 0.15), (".md", 0.1), (".txt", 0.05)]
    exts = [k for k, _ in kinds]
    kind_weights = [w for _, w in kinds]
    total = 0
    sigma = 1.0
    mu = math.log(mean_kb * 1024) - sigma * sigma / 2
    # About 15 files per folder, as in a cutlass clone (~30k files in ~2k folders).
    dirs: list[tuple[str, ...]] = []
    while len(dirs) < max(1, files // 15):
        depth = rng.randint(1, 4)
        parts = [rng.choice(["include", "examples", "test", "tools", "python", "media", "docs"])]
        parts += [f"{rng.choice(VOCAB).lower().strip('_')[:12] or 'dir'}{rng.randint(0, 9)}" for _ in range(depth - 1)]
        dirs.append(tuple(parts))
    for i in range(files):
        ext = rng.choices(exts, kind_weights)[0]
        path = folder.joinpath(*rng.choice(dirs), f"{rng.choice(VOCAB).lower()}_{i}{ext}")
        path.parent.mkdir(parents=True, exist_ok=True)
        size = min(200_000, int(rng.lognormvariate(mu, sigma)))
        tokens = words[nprng.choice(len(words), size=max(8, size // 8), p=weights)]
        lines = []
        pos = 0
        while pos < len(tokens):
            width = rng.randint(3, 12)
            lines.append("  " * rng.randint(0, 3) + " ".join(tokens[pos:pos + width]))
            pos += width
        text = "\n".join(lines) + "\n"
        path.write_text(text)
        total += len(text)
    return total


COMMON_QUERIES = ["tile thread", "value index shape", "block warp element"]  # the commonest non-stopwords
QUERIES = ["wgmma warpgroup fence", "make_tiled_copy", "TMA descriptor multicast", "swizzle bank conflict",
           "cp_async wait_group pipeline", "bfloat16_t accumulator epilogue", "ldmatrix", "persistent scheduler"]


def timed(fn, *args, **kwargs):
    t = time.perf_counter()
    value = fn(*args, **kwargs)
    return value, time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=30_000)
    ap.add_argument("--mean-kb", type=float, default=5.0)
    ap.add_argument("--dir", help="generate into (and keep) this folder")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-record", action="store_true", help="do not append to bench/RESULTS.md")
    args = ap.parse_args()
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="kerneltui-ctx-bench-"))
    folder = base / "context"
    db = base / "index.sqlite3"
    rows: list[tuple[str, str]] = []
    try:
        if not folder.exists() or sum(1 for _ in folder.rglob("*") if _.is_file()) < args.files:
            shutil.rmtree(folder, ignore_errors=True)
            nbytes, gen_s = timed(generate, folder, args.files, args.mean_kb)
            print(f"generated {args.files:,} files, {nbytes / 1e6:.0f} MB in {gen_s:.1f} s", flush=True)
        nbytes = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        if db.exists():
            db.unlink()
        index = ContextIndex(folder, db_path=db)
        stats, cold = timed(index.refresh)
        rows.append(("cold build (first use of a folder)",
                     f"{cold:.1f} s ({stats.files:,} files, {nbytes / 1e6:.0f} MB, {stats.chunks_written:,} chunks, "
                     f"index {db.stat().st_size / 1e6:.0f} MB)"))
        walks = [timed(index.refresh)[1] for _ in range(3)]
        rows.append(("background refresh, nothing changed", f"{statistics.median(walks) * 1000:.0f} ms (median of 3)"))
        touched = sorted(folder.rglob("*.hpp"))[:50]
        for p in touched:
            p.write_text(p.read_text() + "\n// touched wgmma\n")
        stats2, touch = timed(index.refresh)
        rows.append(("background refresh, 50 files changed", f"{touch * 1000:.0f} ms ({stats2.updated} updated)"))
        times = []
        for q in QUERIES:
            for _ in range(3):
                hits, t = timed(index.search, q, 8)
                times.append(t)
                assert hits, f"no hits for {q!r}"
        rows.append(("search_context query, median", f"{statistics.median(times) * 1000:.1f} ms over {len(times)}"))
        rows.append(("search_context query, worst", f"{max(times) * 1000:.1f} ms"))
        common = []
        sampled = 0
        for q in COMMON_QUERIES:
            hits, t = timed(index.search, q, 8)
            common.append(t)
            sampled += any(h.sampled for h in hits)
        rows.append(("very common words only, worst", f"{max(common) * 1000:.0f} ms "
                     f"({sampled} of {len(COMMON_QUERIES)} ranked on a sample of the matches)"))
        code = ("import sys,time; t=time.perf_counter(); sys.path.insert(0, sys.argv[1]);"
                "from pathlib import Path; from kerneltui.core.agent.search import ContextIndex;"
                "i=ContextIndex(Path(sys.argv[2]), db_path=Path(sys.argv[3]));"
                "h=i.search('wgmma warpgroup fence', 8); assert h; print(time.perf_counter()-t)")
        firsts = []
        for _ in range(3):
            out = subprocess.run([sys.executable, "-c", code, str(ROOT), str(folder), str(db)], capture_output=True,
                                 text=True, check=True)
            firsts.append(float(out.stdout))
        rows.append(("first query of a new session (import + open + query)",
                     f"{statistics.median(firsts) * 1000:.0f} ms (median of 3; the refresh runs in the background)"))
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    width = max(len(k) for k, _ in rows)
    table = "\n".join(f"| {k:<{width}} | {v} |" for k, v in rows)
    header = f"| {'step':<{width}} | time |\n|{'-' * (width + 2)}|------|"
    print(header)
    print(table)
    if not args.no_record:
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        machine = (f"{platform.node()} · {os.cpu_count()} CPUs (load average {load}) · Python "
                   f"{platform.python_version()} · SQLite {sqlite3.sqlite_version}")
        with open(ROOT / "bench" / "RESULTS.md", "a", encoding="utf-8") as f:
            f.write(f"\n## Context search on {args.files:,} files ({datetime.date.today()})\n\n")
            f.write(f"`python bench/context_search.py --files {args.files} --mean-kb {args.mean_kb}` on {machine}\n\n")
            f.write("Target: a search answers in under 1 s. The refresh walks every file (stat); sessions run it in "
                    "the background.\n\n")
            f.write(header + "\n" + table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
