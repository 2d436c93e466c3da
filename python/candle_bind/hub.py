"""torch.hub stand-in: the cache directory functions libraries read (transformers imports this
module); downloading (load, load_state_dict_from_url, ...) raises, since candle_bind loads only
local files."""

from __future__ import annotations

import os

__all__ = ["get_dir", "set_dir", "load", "list", "help", "load_state_dict_from_url", "download_url_to_file"]

_hub_dir = None


def _get_torch_home() -> str:
    return os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "torch")))


def get_dir() -> str:
    return _hub_dir or os.getenv("TORCH_HUB") or os.path.join(_get_torch_home(), "hub")


def set_dir(d) -> None:
    global _hub_dir
    _hub_dir = os.path.expanduser(str(d))


def _no_download(what: str):
    raise NotImplementedError(f"torch.hub.{what}: candle_bind does not download models; load a local file "
                              "(candle_bind.load, safetensors.load_file, from_pretrained on a folder)")


def load(*args, **kwargs):
    _no_download("load")


def list(*args, **kwargs):  # noqa: A001 - torch's name
    _no_download("list")


def help(*args, **kwargs):  # noqa: A001 - torch's name
    _no_download("help")


def load_state_dict_from_url(*args, **kwargs):
    _no_download("load_state_dict_from_url")


def download_url_to_file(*args, **kwargs):
    _no_download("download_url_to_file")
