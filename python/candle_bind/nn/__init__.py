"""candle_bind.nn: torch.nn's Module system and layers over Candle."""

from . import functional, init, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from .parameter import Buffer, Parameter, UninitializedParameter  # noqa: F401
