"""torch.multiprocessing: Python's multiprocessing (candle_bind tensors pickle by value, so no
shared-memory reductions are registered)."""

from multiprocessing import *  # noqa: F401,F403
from multiprocessing import get_all_start_methods, get_context, get_start_method, set_start_method  # noqa: F401


def get_sharing_strategy() -> str:
    return "file_system"


def set_sharing_strategy(new_strategy: str) -> None:
    return None


def get_all_sharing_strategies() -> set:
    return {"file_system"}
