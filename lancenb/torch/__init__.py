"""PyTorch integration (pylance's ``lance.torch``): :mod:`lancenb.torch.data`
(``LanceDataset``, ``SafeLanceDataset``, ``get_safe_loader``), :mod:`lancenb.torch.dist`
and :func:`preferred_device`.

``import lancenb`` never imports torch; this package imports it when a submodule that
needs it is imported, or :func:`preferred_device` is called.
"""

from __future__ import annotations

__all__ = ["preferred_device"]


def preferred_device(device=None):
    """``device`` as a ``torch.device``, or the best one available (CUDA, then Apple
    MPS, then the CPU).

    Examples
    --------
    >>> preferred_device("cpu")  # doctest: +SKIP
    device(type='cpu')
    """
    import torch

    if device is not None:
        return torch.device(device) if isinstance(device, str) else device
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available() and mps.is_built():
        return torch.device("mps")
    return torch.device("cpu")
