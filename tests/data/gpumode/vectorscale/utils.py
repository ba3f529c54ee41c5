import torch


def make_match_reference(reference, rtol=1e-5, atol=1e-6):
    def check(data, output):
        expected = reference(tuple(t.clone() if isinstance(t, torch.Tensor) else t for t in data))
        if output.shape != expected.shape:
            return False, f"shape {tuple(output.shape)} != {tuple(expected.shape)}"
        bad = ~torch.isclose(output, expected, rtol=rtol, atol=atol)
        if bad.any():
            idx = int(torch.nonzero(bad.reshape(-1))[0])
            return False, f"{int(bad.sum())} mismatches, first at {idx}: {output.reshape(-1)[idx]} vs {expected.reshape(-1)[idx]}"
        return True, ""

    return check
