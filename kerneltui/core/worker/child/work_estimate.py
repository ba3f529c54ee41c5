"""The work one call of a reference does, estimated where the task declares none.

A roofline needs the FLOPs and the bytes a call must move. Native tasks may declare them
(``flops(**params)``, ``bytes_moved(**params)``); KernelBench and GPU MODE problems never do, so
they are estimated from one call of the reference on the case's inputs:

* **bytes**: every distinct input tensor read once and every output tensor written once (an
  output that is an input's buffer, a preallocated output, counted once), plus tensors the call
  reads besides its inputs (a model's parameters and buffers). No correct kernel moves less
  unless it skips reading an input, so the floor this gives is an honest lower bound;
* **FLOPs**: ``torch.utils.flop_counter.FlopCounterMode`` around the call. It counts the
  operators it has formulas for (matmuls, convolutions, attention) and nothing for elementwise
  work, so a count of zero means "no matmul-class work": the case is then memory-bound by bytes.

Numbers from here are marked as estimated wherever they are shown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class WorkEstimate:
    flops: float | None  # None: no operator the counter knows ran (elementwise work only)
    bytes: float
    method: str


def estimate_work(torch: Any, call: Callable[[Any], Any], inputs: Any, reads: Iterable[Any] = ()) -> WorkEstimate:
    """One call of ``call(inputs)`` under the FLOP counter; bytes from the tensors in and out."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        output = call(inputs)
    flops = float(counter.get_total_flops())
    seen: set[tuple[str, int]] = set()
    total = 0
    for tensor in (*_tensors(inputs, torch), *_tensors(list(reads), torch), *_tensors(output, torch)):
        key = (str(tensor.device), tensor.untyped_storage().data_ptr())
        if key in seen:
            continue
        seen.add(key)
        total += tensor.numel() * tensor.element_size()
    method = ("bytes: inputs read once + outputs written once; FLOPs: torch.utils.flop_counter on the reference"
              + ("" if flops > 0 else " (it counted none: memory-bound by bytes)"))
    return WorkEstimate(flops=flops if flops > 0 else None, bytes=float(total), method=method)


def _tensors(value: Any, torch: Any) -> Iterator[Any]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item, torch)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item, torch)
