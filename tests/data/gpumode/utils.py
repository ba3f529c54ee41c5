"""Helpers shared by the problems of this folder (each task.yml pulls it in as utils.py)."""

import os

import torch


def _mismatch_report(bad: torch.Tensor, received: torch.Tensor, expected: torch.Tensor, limit: int = 5) -> list[str]:
    count = int(bad.count_nonzero().item())
    if count == 0:
        return []
    lines = [f"{count} mismatched elements"]
    for index in torch.nonzero(bad)[:limit]:
        at = tuple(index.tolist())
        lines.append(f"at {at}: got {received[at].item()} expected {expected[at].item()}")
    return lines


@torch.no_grad()
def close_enough(received: torch.Tensor, expected: torch.Tensor, rtol: float = 1e-5, atol: float = 1e-8) -> list[str]:
    """Problems found comparing received with expected elementwise (NaN and inf must sit in the same places)."""
    if received.shape != expected.shape:
        return [f"shape {tuple(received.shape)} differs from {tuple(expected.shape)}"]
    r, e = received.double(), expected.double()
    off = (r - e).abs() > atol + rtol * e.abs()
    nan = torch.isnan(r) ^ torch.isnan(e)
    inf = (torch.isposinf(r) ^ torch.isposinf(e)) | (torch.isneginf(r) ^ torch.isneginf(e))
    return _mismatch_report(off | nan | inf, received, expected)


@torch.no_grad()
def exactly_equal(received: torch.Tensor, expected: torch.Tensor) -> list[str]:
    if received.shape != expected.shape:
        return [f"shape {tuple(received.shape)} differs from {tuple(expected.shape)}"]
    return _mismatch_report(received != expected, received, expected)


def match_reference(data, output, reference, rtol=1e-5, atol=1e-8) -> tuple[bool, str]:
    expected = reference(data)
    problems = close_enough(output, expected, rtol=rtol, atol=atol)
    if problems:
        return False, "output differs from the reference: " + "; ".join(problems)
    return True, ""


def make_match_reference(reference, **tolerance):
    def check(data, output):
        return match_reference(data, output, reference=reference, **tolerance)

    return check


class DeterministicContext:
    """Deterministic algorithms while the reference runs; the previous settings come back after."""

    def __enter__(self):
        self._saved = (torch.are_deterministic_algorithms_enabled(), os.environ.get("CUBLAS_WORKSPACE_CONFIG"))
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
        return self

    def __exit__(self, *exc):
        enabled, workspace = self._saved
        torch.use_deterministic_algorithms(enabled)
        if workspace is None:
            os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)
        return False


def device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"
