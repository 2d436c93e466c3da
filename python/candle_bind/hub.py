"""torch.hub stand-in: the cache directory functions libraries read (transformers imports this
module); downloading (load, load_state_dict_from_url, ...) raises, since candle_bind loads only
local files."""

from __future__ import annotations

import os
import re
from urllib.parse import urlparse  # noqa: F401 - torch.hub re-exports it (timm imports it from here)

__all__ = ["get_dir", "set_dir", "load", "list", "help", "load_state_dict_from_url", "download_url_to_file"]

_hub_dir = None
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")  # torch's: the hash prefix in a checkpoint's file name

try:  # torch.hub's progress bar, which torchvision imports from here
    from tqdm import tqdm  # noqa: F401
except ImportError:  # pragma: no cover
    tqdm = None


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


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False,
                             file_name=None, weights_only=False):
    """The checkpoint torch.hub cached for `url` (`<hub dir>/checkpoints/<file name>`), loaded as torch does;
    one that is not cached raises: candle_bind does not download."""
    from . import serialization

    name = file_name or os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir or os.path.join(get_dir(), "checkpoints"), name)
    if not os.path.exists(cached):
        raise NotImplementedError(f"torch.hub.load_state_dict_from_url: {cached} is not cached and candle_bind does "
                                  f"not download; fetch {url} there first (or load a local file)")
    return serialization.load(cached, map_location=map_location, weights_only=weights_only)


def download_url_to_file(*args, **kwargs):
    _no_download("download_url_to_file")
