"""Which part of the worker's box, if any, stops CUDA: start a CUDA program under the supervisor with
the box as kerneltui builds it, then with one part of it left out at a time.

Prints one row per variant (CUDA up or the error the program printed) and the GPU device nodes.
Run it on a GPU machine as the user kerneltui runs as:

    python bench/sandbox_cuda_probe.py [--out FILE.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PROGRAM = ("import torch; n = torch.cuda.device_count(); x = torch.ones(4, device='cuda'); "
           "torch.cuda.synchronize(); print('CUDA up:', n, 'device(s),', float(x.sum()))")


# Landlock applied by the program itself (the rest of the box from the supervisor), with more granted
# than the box grants: which grant lets CUDA start. GRANTS: label -> Python expression of extra rules.
SELF_LANDLOCK = """
import json, os, sys
from kerneltui.core.sandbox import landlock
from kerneltui.core.sandbox.filesystem import FilesystemPlan, rules_for
from kerneltui.core.sandbox.landlock import READ, WRITE, WRITE_FILE, TRUNCATE, IOCTL_DEV, Rule
data = json.loads(os.environ.pop("PROBE_PLAN"))
pid = os.getpid()
extra = eval(os.environ.pop("PROBE_GRANT"))
landlock.restrict_self(data["abi"], rules_for(FilesystemPlan.from_dict(data["filesystem"])) + extra)
""" + PROGRAM
GRANTS = {
    "own /proc/<pid>/task": "[Rule(f'/proc/{pid}/task', READ | WRITE_FILE)]",
    "own /proc/<pid>": "[Rule(f'/proc/{pid}', READ | WRITE_FILE | TRUNCATE)]",
    "all of /proc": "[Rule('/proc', READ | WRITE_FILE | TRUNCATE)]",
    "all of /proc and /sys": "[Rule('/proc', READ | WRITE_FILE | TRUNCATE), Rule('/sys', READ | WRITE_FILE | TRUNCATE)]",
    "all of /proc, /sys, /dev written": "[Rule('/proc', WRITE), Rule('/sys', WRITE), Rule('/dev', WRITE | IOCTL_DEV)]",
}


def variants(plan, policy):  # type: ignore[no-untyped-def]
    fs = plan.filesystem
    yield "the whole box", policy
    yield "no network namespace", dataclasses.replace(policy, box=dataclasses.replace(plan, network=""))
    yield "no Landlock", dataclasses.replace(policy, box=dataclasses.replace(plan, landlock_abi=0))
    if fs is not None:
        for hidden in fs.hidden:
            smaller = dataclasses.replace(fs, hidden=tuple(h for h in fs.hidden if h != hidden))
            yield f"Landlock without hiding {hidden}", dataclasses.replace(
                policy, box=dataclasses.replace(plan, filesystem=smaller))
    yield "no resource limits", dataclasses.replace(policy, box=dataclasses.replace(
        plan, address_space=0, open_files=0, extra_tasks=0))
    yield "capabilities kept", dataclasses.replace(policy, box=dataclasses.replace(plan, drop_capabilities=False))
    yield "no cgroup", dataclasses.replace(policy, cgroup="")
    for label in GRANTS:
        yield f"self-applied Landlock + {label}", dataclasses.replace(
            policy, box=dataclasses.replace(plan, landlock_abi=0, filesystem=None))
    yield "supervisor only (box off)", dataclasses.replace(policy, box=None)
    yield "supervisor only, environment not scrubbed", dataclasses.replace(policy, box=None)


def main() -> int:
    from kerneltui.core.sandbox.box import open_box
    from kerneltui.core.sandbox.settings import SandboxSettings
    from kerneltui.core.sandbox.support import probe_here

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=None)
    parser.add_argument("--only", default="", help="comma-separated words: run only variants naming one")
    args = parser.parse_args()
    nodes = {p: oct(os.stat(p).st_mode & 0o7777) for p in sorted(glob.glob("/dev/nvidia*"))}
    print("GPU device nodes:", nodes)
    outside = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=300)
    rows = [("outside any box", outside.returncode, (outside.stdout + outside.stderr).strip()[-400:])]
    settings, support = SandboxSettings(), probe_here()
    first = open_box(settings, support, python=sys.executable, lifeline=False)
    first.release()
    assert first.policy.box is not None, "the box is off here: nothing to probe"
    print("box:", json.dumps(dataclasses.asdict(first.policy.box))[:2000])
    names = [name for name, _ in variants(first.policy.box, first.policy)]
    wanted = [w for w in args.only.split(",") if w]
    for index, name in enumerate(names):
        if wanted and not any(w in name for w in wanted):
            continue
        # A fresh scratch folder and cgroup each time: the supervisor removes both when it ends.
        box = open_box(settings, support, python=sys.executable, lifeline=False)
        try:
            assert box.policy.box is not None
            policy = list(variants(box.policy.box, box.policy))[index][1]
            policy_file = box.scratch / "probe-policy.json"
            policy_file.write_text(policy.to_json(), encoding="utf-8")
            env = dict(os.environ) if "not scrubbed" in name else dict(box.env)
            program = PROGRAM
            if name.startswith("self-applied"):
                program = SELF_LANDLOCK
                env["PROBE_GRANT"] = GRANTS[name.split(" + ", 1)[1]]
                env["PROBE_PLAN"] = json.dumps({"abi": box.policy.box.landlock_abi,
                                                "filesystem": box.policy.box.filesystem.to_dict()})
            proc = subprocess.run([sys.executable, "-m", "kerneltui.core.sandbox.launch", str(policy_file), "--",
                                   sys.executable, "-c", program], env=env, capture_output=True, text=True,
                                  timeout=300)
        finally:
            box.release()
        rows.append((name, proc.returncode, (proc.stdout + proc.stderr).strip()[-400:]))
        print(f"{name}: rc={proc.returncode} {rows[-1][2][-200:]!r}", flush=True)
    print("\n| variant | exit | output (end) |\n|---|---|---|")
    for name, rc, text in rows:
        print(f"| {name} | {rc} | {text[-160:].replace('|', '/').replace(chr(10), ' ')} |")
    if args.out:
        Path(args.out).write_text(json.dumps({"nodes": nodes, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
