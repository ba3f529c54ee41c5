"""Write a version's dump: every stage of every kernel specialisation, SASS, maps and reports.

Layout under ``<version>/dump/``::

    index.json                       kernels, variants, stage files, resource reports, instruction mix
    <kernel>/<variant>.ptx|.ttir|.ttgir|.ll|.mlir|.sass|.cubin
    <kernel>/<variant>.map.json      per stage: asm line -> source frames (see core.asm.srcmap)

Paths inside the worker's private copy of the task are written task-relative (``kernel.py``) in
every text stage, so two versions' dumps compare line by line.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from kerneltui.core.asm.artifact import STAGE_ORDER, STAGE_SUFFIX, KernelArtifact
from kerneltui.core.asm.cline import parse_line_directives
from kerneltui.core.asm.elf import CubinError, read_cubin
from kerneltui.core.asm.llvm import parse_llvm_locations
from kerneltui.core.asm.mix import InstructionMix, InstructionMixData, access_bits, ptx_mix, sass_mix
from kerneltui.core.asm.mlir import parse_mlir_locations
from kerneltui.core.asm.ptx import PtxListing, blank_line_info, parse_ptx
from kerneltui.core.asm.resources import (
    PtxasRun,
    ResourceReport,
    ResourceReportData,
    build_report,
    kernel_resources,
    rerun_ptxas,
)
from kerneltui.core.asm.sass import DisassemblyError, disassemble, link_to_ptx, parse_sass
from kerneltui.core.asm.srcmap import LineMap, relative_to_root
from kerneltui.core.asm.tools import Tool, Toolset, tool_version
from kerneltui.core.rungs.rung_metrics import DumpMetrics

INDEX_NAME = "index.json"
PARALLEL_VARIANTS = 2
FORMAT_VERSION = 1
Progress = Callable[[str, float | None], None]


class StageFile(TypedDict, total=False):
    """One stage of a variant in the dump's index: its file and what is known of it."""

    file: str  # relative to the dump folder
    lines: int  # a text stage's
    bytes: int  # the cubin's
    tool: str  # sass: the disassembler that wrote it
    linked_to_ptx: bool  # sass: its lines map to the PTX's
    mapped_lines: int  # lines with a source location


class VariantData(TypedDict):
    """``VariantDump.to_json()``: one specialisation of a kernel in the index (``store.Variant`` reads it)."""

    kernel: str
    variant: str
    slug: str
    source_file: str | None
    primary: bool
    metadata: Mapping[str, object]  # the compiler's own metadata, as the backend gave it
    stages: dict[str, StageFile]
    map_file: str
    resources: ResourceReportData | None
    mix: InstructionMixData | None
    problems: list[str]


class KernelEntry(TypedDict):
    kernel: str
    variants: list[VariantData]


class DumpIndex(TypedDict):
    """The dump's ``index.json``."""

    format: int
    created: str
    arch: str
    backend: str
    tools: dict[str, dict[str, str] | None]
    task_files: list[str]
    problems: list[str]
    notes: list[str]
    kernels: list[KernelEntry]
    summary: NotRequired[str]
    metrics: NotRequired[DumpMetrics]


@dataclass
class VariantDump:
    kernel: str
    variant: str
    slug: str
    source_file: str | None
    metadata: dict[str, Any]
    stages: dict[str, StageFile] = field(default_factory=dict)
    resources: ResourceReport | None = None
    mix: InstructionMix | None = None
    problems: list[str] = field(default_factory=list)
    primary: bool = False

    def to_json(self) -> VariantData:
        return {
            "kernel": self.kernel, "variant": self.variant, "slug": self.slug, "source_file": self.source_file,
            "primary": self.primary, "metadata": self.metadata, "stages": self.stages,
            "map_file": f"{_safe(self.kernel)}/{self.slug}.map.json",
            "resources": self.resources.to_dict() if self.resources else None,
            "mix": self.mix.to_dict() if self.mix else None,
            "problems": self.problems,
        }


@dataclass
class DumpResult:
    dump_dir: Path
    index: DumpIndex
    variants: list[VariantDump]
    problems: list[str]

    @property
    def primary(self) -> VariantDump | None:
        return headline_variant(self.variants) if self.variants else None


def write_dump(dump_dir: Path, artifacts: list[KernelArtifact], *, arch: str, backend: str,
               source_roots: list[str], task_files: list[str], tools: Toolset | None = None,
               progress: Progress | None = None, notes: list[str] | None = None) -> DumpResult:
    tools = tools or Toolset.discover()
    progress = progress or _no_progress
    if dump_dir.exists():
        shutil.rmtree(dump_dir)
    dump_dir.mkdir(parents=True)
    problems: list[str] = []
    if tools.disassembler is None and any(a.cubin for a in artifacts):
        problems.append(tools.missing_disassembler_message())
    source_roots = list(source_roots) + roots_from_file_maps(artifacts)
    source_roots += infer_roots(artifacts, task_files, source_roots)
    used_slugs: dict[str, set[str]] = {}
    slugs = [_unique_slug(art.variant, used_slugs.setdefault(art.kernel, set())) for art in artifacts]
    progress(f"disassembling {len(artifacts)} kernel build(s) and reading their resources", None)
    # The work is in nvdisasm and ptxas subprocesses, which mostly wait: a few threads overlap them.
    with ThreadPoolExecutor(max_workers=max(1, min(PARALLEL_VARIANTS, len(artifacts)))) as pool:
        futures = [pool.submit(_write_variant, dump_dir, art, slug, arch, source_roots, task_files, tools)
                   for art, slug in zip(artifacts, slugs, strict=True)]
        variants = []
        for i, future in enumerate(futures):
            variants.append(future.result())
            progress(f"{variants[-1].kernel} [{variants[-1].variant}] done", (i + 1) / len(futures))
    _choose_primary(variants)
    index: DumpIndex = {
        "format": FORMAT_VERSION,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "arch": arch,
        "backend": backend,
        "tools": tools.to_dict(),
        "task_files": sorted(task_files),
        "problems": problems,
        "notes": list(notes or []),
        "kernels": _group(variants),
    }
    summary, metrics = summarise(variants, problems)
    index["summary"] = summary
    index["metrics"] = metrics
    (dump_dir / INDEX_NAME).write_text(json.dumps(index, indent=1, default=str), encoding="utf-8")
    return DumpResult(dump_dir=dump_dir, index=index, variants=variants, problems=problems)


def _no_progress(message: str, fraction: float | None = None) -> None:
    return None


def _write_variant(dump_dir: Path, art: KernelArtifact, slug: str, arch: str, roots: list[str],
                   task_files: list[str], tools: Toolset) -> VariantDump:
    kdir = dump_dir / _safe(art.kernel)
    kdir.mkdir(parents=True, exist_ok=True)
    out = VariantDump(kernel=art.kernel, variant=art.variant, slug=slug, source_file=art.source_file,
                      metadata=dict(art.metadata), primary=bool(art.metadata.get("primary")))
    maps: dict[str, LineMap] = {}
    texts = {stage: normalise_paths(text, roots) for stage, text in art.texts.items()}
    ptx: PtxListing | None = None
    for stage in STAGE_ORDER:
        text = texts.get(stage)
        if text is None:
            continue
        if stage == "ptx":
            ptx = parse_ptx(text)
            maps[stage] = ptx.line_map
        elif stage in ("ttir", "ttgir", "mlir"):
            maps[stage] = parse_mlir_locations(text)
        elif stage == "llir":
            maps[stage] = parse_llvm_locations(text)
        elif stage == "cuda":
            maps[stage] = parse_line_directives(text)
        _write_text(kdir / f"{slug}{STAGE_SUFFIX[stage]}", text)
        out.stages[stage] = {"file": f"{_safe(art.kernel)}/{slug}{STAGE_SUFFIX[stage]}", "lines": text.count("\n") + 1}

    sass_listing = None
    cubin_info = None
    if art.cubin:
        (kdir / f"{slug}.cubin").write_bytes(art.cubin)
        out.stages["cubin"] = {"file": f"{_safe(art.kernel)}/{slug}.cubin", "bytes": len(art.cubin)}
        try:
            cubin_info = read_cubin(art.cubin)
        except CubinError as exc:
            out.problems.append(f"cannot read the cubin of {art.kernel}: {exc}")
        tool = tools.disassembler
        if tool is not None:
            try:
                dis = disassemble(art.cubin, tool)
                text = normalise_paths(dis.text, roots)
                linked = ptx is not None and cubin_info is not None and cubin_info.embedded_ptx is not None \
                    and ptx_matches_embedded(texts["ptx"], ptx, cubin_info.embedded_ptx)
                sass_listing = parse_sass(text, dis.ptx_annotated if linked else None)
                sass_map = sass_listing.line_map
                if linked and ptx is not None:
                    sass_map = link_to_ptx(sass_listing, ptx.line_map)
                maps["sass"] = sass_map
                _write_text(kdir / f"{slug}.sass", text)
                out.stages["sass"] = {"file": f"{_safe(art.kernel)}/{slug}.sass", "lines": text.count("\n") + 1,
                                      "tool": tool.describe(), "linked_to_ptx": bool(linked)}
                out.problems.extend(f"{tool.name}: {w}" for w in dis.warnings if "warning" in w.lower()
                                    and "Dataflow" not in w and "Old format" not in w)
            except DisassemblyError as exc:
                out.problems.append(str(exc))
    for stage, line_map in maps.items():
        rel = _relabel(line_map, roots)
        maps[stage] = rel
        out.stages[stage]["mapped_lines"] = len(rel)
    (kdir / f"{slug}.map.json").write_text(
        json.dumps({"task_files": task_files, "stages": {s: m.to_json() for s, m in maps.items()}}, separators=(",", ":")),
        encoding="utf-8")

    # The instruction mix of this kernel alone (a cubin or PTX module can hold several).
    if sass_listing is not None and sass_listing.instructions:
        own = [i for i in sass_listing.instructions if i.function == art.symbol]
        if not own and len(sass_listing.functions) == 1:
            own = sass_listing.instructions
        if not own:
            own = [i for i in sass_listing.instructions if art.kernel in i.function]
        out.mix = sass_mix(own or sass_listing.instructions)
    elif ptx is not None:
        out.mix = ptx_mix(_ptx_instructions_of(ptx, art.symbol))

    # ptxas runs on the PTX as the backend wrote it: the paths in its line info are part of the cubin.
    ptxas_run = _ptxas_rerun(art, art.texts.get("ptx"), ptx, tools, out.problems)
    kres = kernel_resources(cubin_info, art.kernel, art.symbol) if cubin_info else None
    local_loads = local_stores = 0
    if out.mix is not None and out.mix.source == "sass":
        local_loads = sum(n for op, n in out.mix.local.items() if op.startswith("LDL"))
        local_stores = sum(n for op, n in out.mix.local.items() if op.startswith("STL"))
    target = (ptx.target if ptx and ptx.target else None) or (cubin_info.arch if cubin_info else None) or arch
    if art.cubin is not None or ptxas_run is not None:
        out.resources = build_report(art.kernel, target, art.metadata, kres, ptxas_run, art.symbol,
                                     local_loads, local_stores)
    return out


def _ptx_instructions_of(ptx: PtxListing, symbol: str) -> list[Any]:
    entries = [e for e in ptx.entries if e.name == symbol] or [e for e in ptx.entries if e.kind == "entry"][:1]
    if not entries or len(ptx.entries) == 1:
        return ptx.instructions
    start, end = entries[0].start, entries[0].end or 10**9
    return [i for i in ptx.instructions if start <= i.line <= end]


def _ptxas_rerun(art: KernelArtifact, ptx_text: str | None, ptx: PtxListing | None, tools: Toolset,
                 problems: list[str]) -> PtxasRun | None:
    if ptx_text is None or ptx is None or not ptx.target:
        return None
    tool = _ptxas_for(art, tools)
    if tool is None:
        problems.append("no ptxas found: spill stores/loads are not reported (registers and local memory come "
                        "from the cubin); install triton or a CUDA toolkit to get them")
        return None
    options = [str(o) for o in art.metadata.get("ptxas_options") or []]
    try:
        return rerun_ptxas(ptx_text, ptx.target, tool, art.cubin, options)
    except RuntimeError as exc:
        problems.append(str(exc))
        return None


def _ptxas_for(art: KernelArtifact, tools: Toolset) -> Tool | None:
    """The ptxas that built the cubin when the backend says which, else the first one found."""
    named = art.metadata.get("ptxas")
    if isinstance(named, str) and Path(named).is_file():
        return Tool(name="ptxas", path=named, origin="the backend's own", version=tool_version(named))
    return tools.ptxas


def ptx_matches_embedded(ptx_text: str, ptx: PtxListing, embedded: str) -> bool:
    """Whether the PTX copy ptxas kept in the cubin is this PTX (so -gp line numbers refer to it)."""
    kept = [" ".join(line.split()) for line in embedded.split("\x00")]
    mine = blank_line_info(ptx_text)
    if not ptx.instructions:
        return False
    for inst in ptx.instructions:
        if inst.line > len(kept) or kept[inst.line - 1] != mine[inst.line - 1]:
            return False
    return True


_QUOTED_PATH = re.compile(r'"(/[^"\n]+)"')


def infer_roots(artifacts: list[KernelArtifact], task_files: list[str], known: list[str]) -> list[str]:
    """Folders that held the task's files when a stage was first compiled.

    Triton's compile cache is keyed on the kernel's source, not its path, so a kernel compiled from
    another copy of the same file (an earlier worker's private copy, the task folder itself) comes
    back with that copy's paths in its line info. A quoted absolute path that ends in one of the
    task's own files names such a copy, unless it is an installed package's file.
    """
    found: list[str] = []
    rels = sorted({f for f in task_files if f}, key=len, reverse=True)
    for art in artifacts:
        for text in art.texts.values():
            for path in set(_QUOTED_PATH.findall(text)):
                if "-packages/" in path or any(path.startswith(r.rstrip("/") + "/") for r in [*known, *found]):
                    continue
                for rel in rels:
                    if path.endswith("/" + rel):
                        found.append(path[: -len(rel) - 1])
                        break
    return list(dict.fromkeys(found))


def roots_from_file_maps(artifacts: list[KernelArtifact]) -> list[str]:
    """Folders named by a backend's ``metadata.file_map`` (absolute path -> task-relative name)."""
    out: list[str] = []
    for art in artifacts:
        file_map = art.metadata.get("file_map")
        if not isinstance(file_map, dict):
            continue
        for path, rel in file_map.items():
            if isinstance(path, str) and isinstance(rel, str) and path.endswith("/" + rel):
                out.append(path[: -len(rel) - 1])
    return list(dict.fromkeys(out))


def normalise_paths(text: str, roots: list[str]) -> str:
    for root in sorted({r.rstrip("/") for r in roots if r}, key=len, reverse=True):
        text = text.replace(root + "/", "").replace(f'"{root}"', '"."')
    return text


def _relabel(line_map: LineMap, roots: list[str]) -> LineMap:
    rename = {}
    for name in line_map.files():
        rel = relative_to_root(name, roots)
        rename[name] = rel[2:] if rel.startswith("./") else rel
    return line_map.relabel(rename)


def _write_text(path: Path, text: str) -> None:
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", name).strip("._")[:80] or "kernel"


def _unique_slug(label: str, used: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9=.-]+", "_", label.replace("%", "mod")).strip("_.")[:60] or "default"
    slug, n = base, 2
    while slug in used:
        slug = f"{base}_{n}"
        n += 1
    used.add(slug)
    return slug


def _choose_primary(variants: list[VariantDump]) -> None:
    """One primary specialisation per kernel: the benchmark's (the backend marks it), else the first."""
    by_kernel: dict[str, list[VariantDump]] = {}
    for v in variants:
        by_kernel.setdefault(v.kernel, []).append(v)
    for group in by_kernel.values():
        chosen = next((v for v in group if v.metadata.get("primary")), group[0])
        for v in group:
            v.primary = v is chosen


def headline_variant(variants: list[VariantDump]) -> VariantDump:
    """The specialisation the summary describes: the first kernel the benchmark runs."""
    return next((v for v in variants if v.primary and v.metadata.get("primary")),
                next((v for v in variants if v.primary), variants[0]))


def _group(variants: list[VariantDump]) -> list[KernelEntry]:
    kernels: dict[str, list[VariantData]] = {}
    for v in variants:
        kernels.setdefault(v.kernel, []).append(v.to_json())
    return [{"kernel": name, "variants": items} for name, items in kernels.items()]


def variant_headline(res: ResourceReport | None, mix: InstructionMix | None) -> list[str]:
    parts: list[str] = []
    if res is not None and res.registers is not None:
        parts.append(f"{res.registers} regs")
    if res is not None:
        parts.append(res.spills_text())
    if mix is not None:
        if mix.tensor_ops:
            parts.append(mix.tensor_label())
        load = mix.widest_global_load()
        if load:
            parts.append(load)
        elif any(op.startswith(("UTMALDG", "cp.async.bulk")) for op in mix.async_copies):
            parts.append("TMA loads")
        elif any(op.startswith(("LDGSTS", "cp.async")) for op in mix.async_copies):
            parts.append(max(mix.async_copies, key=lambda op: (access_bits(op, mix.source), mix.async_copies[op])))
    if res is not None and res.occupancy and res.occupancy.get("blocks_per_sm"):
        parts.append(f"occ {res.occupancy['occupancy']:.0%}")
    return parts


def summarise(variants: list[VariantDump], problems: list[str]) -> tuple[str, DumpMetrics]:
    """The rung's one-line summary (of the primary specialisation) and the numbers behind it."""
    metrics: DumpMetrics = {"kernels": len({v.kernel for v in variants}), "variants": len(variants)}
    if not variants:
        return "no kernels compiled", metrics
    primary = headline_variant(variants)
    parts = variant_headline(primary.resources, primary.mix)
    if metrics["kernels"] > 1:
        parts.insert(0, primary.kernel)
    if len(variants) > 1:
        parts.append(f"{len(variants)} variants")
    if not any(v.mix and v.mix.source == "sass" for v in variants):
        parts.append("no SASS" if problems else "PTX only")
    res, mix = primary.resources, primary.mix
    metrics["primary"] = {"kernel": primary.kernel, "variant": primary.variant}
    if res is not None:
        metrics.update({"registers": res.registers, "spill_store_bytes": res.spill_store_bytes,
                        "spill_load_bytes": res.spill_load_bytes, "stack_frame_bytes": res.stack_frame_bytes,
                        "shared_bytes": res.shared_bytes, "static_shared_bytes": res.static_shared_bytes,
                        "dynamic_shared_bytes": res.dynamic_shared_bytes, "threads_per_block": res.threads_per_block,
                        "local_loads": res.local_loads, "local_stores": res.local_stores})
        if res.occupancy:
            metrics["occupancy"] = round(float(res.occupancy["occupancy"]), 4)
            metrics["occupancy_limited_by"] = res.occupancy.get("limited_by")
    if mix is not None:
        metrics.update({"tensor_ops": mix.tensor_ops,
                        "tensor_op": (mix.tensor_label().split(" ", 1)[1] if mix.tensor_ops else None),
                        "global_load": mix.widest_global_load() or None, "global_store": mix.widest_global_store() or None,
                        "mix_source": mix.source})
        widths = mix.load_widths()
        if widths:
            metrics["global_load_bits"] = max(widths)
    metrics["per_kernel"] = {
        f"{v.kernel} [{v.variant}]": {
            "registers": v.resources.registers if v.resources else None,
            "spills": v.resources.spill_bytes if v.resources else None,
            "tensor_ops": v.mix.tensor_ops if v.mix else 0,
            "global_load": v.mix.widest_global_load() if v.mix else "",
        } for v in variants
    }
    return " · ".join(parts), metrics
