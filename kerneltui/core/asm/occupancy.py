"""Theoretical occupancy of a kernel on one SM, from its resources and launch configuration.

The rules are those of NVIDIA's occupancy calculator: registers are allocated per warp in units of
256 and split over the SM's four sub-partitions; shared memory is allocated per block in 128-byte
units plus 1 KiB the system reserves per block; and the per-SM caps on blocks and warps apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NotRequired, TypedDict


@dataclass(frozen=True)
class ArchLimits:
    name: str
    max_warps_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int = 65536
    max_registers_per_thread: int = 255
    register_unit: int = 256  # registers are allocated per warp in these units
    sub_partitions: int = 4
    shared_per_sm: int = 0  # bytes usable by blocks (the maximum carve-out)
    max_shared_per_block: int = 0  # with the opt-in attribute
    shared_unit: int = 128
    reserved_shared_per_block: int = 1024
    max_threads_per_block: int = 1024


# From the CUDA programming guide's table of compute capabilities.
_LIMITS = {
    70: ArchLimits("sm_70", 64, 32, shared_per_sm=98304, max_shared_per_block=98304, reserved_shared_per_block=0),
    75: ArchLimits("sm_75", 32, 16, shared_per_sm=65536, max_shared_per_block=65536, reserved_shared_per_block=0),
    80: ArchLimits("sm_80", 64, 32, shared_per_sm=167936, max_shared_per_block=166912),
    86: ArchLimits("sm_86", 48, 16, shared_per_sm=102400, max_shared_per_block=101376),
    87: ArchLimits("sm_87", 48, 16, shared_per_sm=167936, max_shared_per_block=166912),
    89: ArchLimits("sm_89", 48, 24, shared_per_sm=102400, max_shared_per_block=101376),
    90: ArchLimits("sm_90", 64, 32, shared_per_sm=233472, max_shared_per_block=232448),
    100: ArchLimits("sm_100", 64, 32, shared_per_sm=233472, max_shared_per_block=232448),
    103: ArchLimits("sm_103", 64, 32, shared_per_sm=233472, max_shared_per_block=232448),
    120: ArchLimits("sm_120", 48, 32, shared_per_sm=102400, max_shared_per_block=101376),
}


def limits_for(arch: str) -> ArchLimits | None:
    """``sm_90a`` → the sm_90 limits; None for an architecture not in the table."""
    digits = "".join(ch for ch in arch.removeprefix("sm_").removeprefix("compute_") if ch.isdigit())
    if not digits:
        return None
    return _LIMITS.get(int(digits))


class OccupancyData(TypedDict):
    """``Occupancy.to_dict()``; the resource report adds its one-line ``text``."""

    arch: str
    threads_per_block: int
    registers_per_thread: int
    shared_per_block: int
    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    occupancy: float
    limited_by: str
    blocks_limit: dict[str, int]
    text: NotRequired[str]  # Occupancy.describe()


@dataclass
class Occupancy:
    arch: str
    threads_per_block: int
    registers_per_thread: int
    shared_per_block: int  # static + dynamic, bytes
    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    occupancy: float  # warps_per_sm / max_warps_per_sm
    limited_by: str  # "registers", "shared memory", "warps", "blocks", or why it cannot launch
    blocks_limit: dict[str, int]

    def to_dict(self) -> OccupancyData:
        return {"arch": self.arch, "threads_per_block": self.threads_per_block,
                "registers_per_thread": self.registers_per_thread, "shared_per_block": self.shared_per_block,
                "blocks_per_sm": self.blocks_per_sm, "warps_per_sm": self.warps_per_sm,
                "max_warps_per_sm": self.max_warps_per_sm, "occupancy": self.occupancy, "limited_by": self.limited_by,
                "blocks_limit": dict(self.blocks_limit)}

    def describe(self) -> str:
        if self.blocks_per_sm == 0:
            return f"cannot launch on {self.arch}: {self.limited_by}"
        return (f"{self.occupancy:.0%} occupancy ({self.blocks_per_sm} blocks × {self.threads_per_block} threads "
                f"per SM, limited by {self.limited_by})")


def estimate(arch: str, threads_per_block: int, registers_per_thread: int, shared_per_block: int) -> Occupancy | None:
    limits = limits_for(arch)
    if limits is None or threads_per_block <= 0:
        return None
    warps_per_block = -(-threads_per_block // 32)
    regs = max(registers_per_thread, 1)

    def result(blocks: int, limited_by: str, caps: dict[str, int]) -> Occupancy:
        warps = blocks * warps_per_block
        return Occupancy(arch=arch, threads_per_block=threads_per_block, registers_per_thread=registers_per_thread,
                         shared_per_block=shared_per_block, blocks_per_sm=blocks, warps_per_sm=warps,
                         max_warps_per_sm=limits.max_warps_per_sm, occupancy=warps / limits.max_warps_per_sm,
                         limited_by=limited_by, blocks_limit=caps)

    if threads_per_block > limits.max_threads_per_block:
        return result(0, f"{threads_per_block} threads per block is over the limit of {limits.max_threads_per_block}", {})
    if regs > limits.max_registers_per_thread:
        return result(0, f"{regs} registers per thread is over the limit of {limits.max_registers_per_thread}", {})
    if shared_per_block > limits.max_shared_per_block:
        return result(0, f"{shared_per_block} bytes of shared memory per block is over the limit of "
                         f"{limits.max_shared_per_block}", {})

    regs_per_warp = _round_up(regs * 32, limits.register_unit)
    warps_per_partition = (limits.registers_per_sm // limits.sub_partitions) // regs_per_warp
    warps_by_regs = warps_per_partition * limits.sub_partitions
    caps = {
        "warps": limits.max_warps_per_sm // warps_per_block,
        "blocks": limits.max_blocks_per_sm,
        "registers": warps_by_regs // warps_per_block,
    }
    if shared_per_block > 0:
        per_block = _round_up(shared_per_block, limits.shared_unit) + limits.reserved_shared_per_block
        caps["shared memory"] = limits.shared_per_sm // per_block
    blocks = min(caps.values())
    # Name the tightest limit; on a tie the hardware cap is named (the kernel's resources are not what binds).
    order = ["warps", "blocks", "registers", "shared memory"]
    limited_by = next(name for name in order if caps.get(name) == blocks)
    if blocks == 0:
        limited_by = f"not even one block fits ({limited_by})"
    return result(blocks, limited_by, caps)


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit
