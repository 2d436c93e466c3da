"""torch.fx: what libraries use at import and around feature extraction. `wrap` marks a function as a leaf
and hands it back; `Tracer`, `Graph`, `GraphModule`, `Node` and `Proxy` exist (to subclass and for
isinstance checks), but tracing a model raises: candle_bind runs Python code eagerly and has no
symbolic tracer. Take features with forward hooks instead (timm: `features_only=True`; torchvision:
`IntermediateLayerGetter`)."""

from __future__ import annotations

from .graph import Graph
from .graph_module import GraphModule
from .node import Node
from .proxy import Proxy
from ._symbolic_trace import Tracer, symbolic_trace, wrap
from .interpreter import Interpreter

__all__ = ["Graph", "GraphModule", "Interpreter", "Node", "Proxy", "Tracer", "symbolic_trace", "wrap"]
