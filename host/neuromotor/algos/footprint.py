"""Byte counts of the arrays an algorithm allocates, for its `memory_parts` (see neuromotor.algos)."""

F32_BYTES = 4  # one float32


def net_params(sizes) -> int:
    """Parameters of a dense network with layer sizes [in, hidden..., out]."""
    return sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:]))


def workspace_row(sizes) -> int:
    """Bytes of one batch row of a forward/backward workspace (outputs, input grads, relu zeros)."""
    return 3 * F32_BYTES * sum(n + 1 for n in sizes)
