"""Where this process sits in a training job: its rank among ``torch.distributed``
processes and its worker id in a ``DataLoader`` (pylance's ``lance.torch.dist``).

The global rank counts DataLoader workers too: ``rank * num_workers + worker_id`` of
``world_size * num_workers``.
"""

from __future__ import annotations

import torch.distributed as dist
import torch.utils.data

__all__ = ["get_dist_world_size", "get_dist_rank", "get_mp_world_size", "get_mp_rank",
           "get_global_world_size", "get_global_rank"]


def get_dist_world_size() -> int:
    """Processes in the ``torch.distributed`` group (1 when it is not initialised)."""
    if dist.is_available() and dist.is_initialized():
        return int(dist.get_world_size())
    return 1


def get_dist_rank() -> int:
    """This process's ``torch.distributed`` rank (0 when it is not initialised)."""
    if dist.is_available() and dist.is_initialized():
        return int(dist.get_rank())
    return 0


def get_mp_world_size() -> int:
    """Workers of the ``DataLoader`` this process works for (1 outside a worker)."""
    info = torch.utils.data.get_worker_info()
    return 1 if info is None else int(info.num_workers)


def get_mp_rank() -> int:
    """This ``DataLoader`` worker's id (0 outside a worker)."""
    info = torch.utils.data.get_worker_info()
    return 0 if info is None else int(info.id)


def get_global_world_size() -> int:
    """Ranks x DataLoader workers."""
    return get_dist_world_size() * get_mp_world_size()


def get_global_rank() -> int:
    """``rank * num_workers + worker_id``."""
    return get_dist_rank() * get_mp_world_size() + get_mp_rank()
