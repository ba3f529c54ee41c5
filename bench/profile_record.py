"""Record real Nsight Compute output for the profile parsers' tests (run on a GPU machine with ncu).

    python bench/profile_record.py OUT_DIR [NAME,NAME…]

For each kernel below it runs the exact ncu command the ``profile`` rung runs, keeps the report,
and exports the CSV pages the summary reads (raw, details, source) with the exact commands in
OUT_DIR/README.txt. One error case is recorded too (a kernel-name filter that matches nothing).
Copy the CSVs and README.txt into tests/data/ncu/.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kerneltui.core.profile.command import ProfileCommand, import_argv  # noqa: E402
from kerneltui.core.profile.locate import find_ncu  # noqa: E402
from kerneltui.core.profile.spec import choose_case, make_spec, target_argv, target_env  # noqa: E402
from kerneltui.core.task_loaders.load import load_task  # noqa: E402

EXAMPLES = ROOT / "kerneltui" / "examples"
TASKS = ROOT / "tests" / "gpu" / "profile_tasks"

# name -> (task folder, benchmark override written into task.toml or None, expected bound)
KERNELS = {
    "memory_vector_add": (EXAMPLES / "vector_add", None, "memory"),
    "compute_matmul_fp16": (TASKS / "matmul_fp16", None, "compute"),
    "latency_fma_chain": (TASKS / "fma_chain", None, "latency"),
    "underutilised_vector_add_4096": (EXAMPLES / "vector_add", {"n": 4096}, "under-utilised"),
}
PAGES = {
    "raw": ("raw", None),
    "details": ("details", None),
    "source_sass": ("source", "sass"),
    "source_cuda_sass": ("source", "cuda,sass"),
    "source_cuda": ("source", "cuda"),
}


def task_copy(src: Path, bench: dict | None, scratch: Path) -> Path:
    dest = scratch / src.name
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", ".kerneltui"))
    if bench:
        toml = dest / "task.toml"
        text = toml.read_text()
        head = text.split("[[benchmarks]]", 1)[0]
        toml.write_text(head + "[[benchmarks]]\n" + "".join(f"{k} = {v}\n" for k, v in bench.items()))
    return dest


def sh(argv: list[str], log: Path, env: dict | None = None, timeout: float = 600) -> int:
    started = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    log.write_text(proc.stdout + ("\n--- stderr ---\n" + proc.stderr if proc.stderr else ""))
    print(f"  rc={proc.returncode} {time.time() - started:.1f}s  {log.name}", flush=True)
    return proc.returncode


def main() -> int:
    out = Path(sys.argv[1]).resolve()
    only = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else set(KERNELS)
    out.mkdir(parents=True, exist_ok=True)
    ncu = find_ncu()
    if not isinstance(ncu, Path):
        print(ncu.message, file=sys.stderr)
        return 2
    readme = [f"ncu: {ncu}", subprocess.run([str(ncu), "--version"], capture_output=True, text=True).stdout.strip(), ""]
    (out / "ncu_help.txt").write_text(subprocess.run([str(ncu), "--help"], capture_output=True, text=True).stdout)
    scratch = Path(tempfile.mkdtemp(prefix="kerneltui-record-"))
    env = target_env()
    for name, (src, bench, expected) in KERNELS.items():
        if name not in only:
            continue
        print(name, flush=True)
        task = load_task(task_copy(src, bench, scratch / name))
        case = choose_case(task)
        work = scratch / f"{name}-work"
        work.mkdir()
        spec_path = work / "spec.json"
        spec_path.write_text(json.dumps(make_spec(task, task.read_sources(), case, out / f"{name}.target.json",
                                               workdir=work)))
        report = out / f"{name}.ncu-rep"
        cmd = ProfileCommand(ncu=ncu, report=report, target=target_argv(spec_path, python=sys.executable))
        rc = sh(cmd.argv(), out / f"{name}.ncu.log", env=env)
        if rc != 0 and "metric" in (out / f"{name}.ncu.log").read_text().lower():
            # A metric this ncu does not know: keep the log, record with the sections alone.
            (out / f"{name}.ncu.log").rename(out / f"{name}.metrics-error.log")
            cmd = ProfileCommand(ncu=ncu, report=report, target=cmd.target, metrics=())
            rc = sh(cmd.argv(), out / f"{name}.ncu.log", env=env)
        readme += [f"## {name} (expected: {expected}; case {case['label']})", " ".join(cmd.argv()), f"exit {rc}"]
        for page_name, (page, source) in PAGES.items():
            argv = import_argv(ncu, report, page, source)
            sh(argv, out / f"{name}.{page_name}.csv")
            readme.append(" ".join(argv) + f" > {name}.{page_name}.csv")
        readme.append("")
    # An error case: a filter that matches no kernel.
    name = "error_no_kernels"
    task = load_task(task_copy(EXAMPLES / "vector_add", {"n": 4096}, scratch / name))
    spec_path = scratch / "nokernels.json"
    spec_path.write_text(json.dumps(make_spec(task, task.read_sources(), choose_case(task), out / f"{name}.target.json")))
    cmd = ProfileCommand(ncu=ncu, report=out / f"{name}.ncu-rep", target=target_argv(spec_path), kernel_name="no_such_kernel")
    rc = sh(cmd.argv(), out / f"{name}.ncu.log", env=env)
    readme += [f"## {name}", " ".join(cmd.argv()), f"exit {rc}", ""]
    (out / "README.txt").write_text("\n".join(readme) + "\n")
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
