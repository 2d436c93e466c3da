"""torch.utils._pytree: flatten nested containers (tuple, list, dict, namedtuple, OrderedDict and
registered types) into leaves and rebuild them, as torch's pytree does."""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from typing import Any, Callable, NamedTuple

__all__ = ["register_pytree_node", "tree_flatten", "tree_unflatten", "tree_map", "tree_map_only", "tree_leaves",
           "tree_structure", "tree_all", "tree_any", "TreeSpec", "LeafSpec", "PyTree"]

PyTree = Any


class _Node(NamedTuple):
    flatten: Callable
    unflatten: Callable
    flatten_with_keys: Callable | None


SUPPORTED_NODES: dict = {}


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None, to_dumpable_context=None,
                         from_dumpable_context=None, flatten_with_keys_fn=None) -> None:
    """`flatten_fn(obj) -> (children, context)`, `unflatten_fn(children, context) -> obj`."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = _Node(flatten_fn, unflatten_fn, flatten_with_keys_fn)


_register_pytree_node = register_pytree_node


def _dict_flatten(d):
    return list(d.values()), list(d.keys())


def _dict_flatten_with_keys(d):
    values, context = _dict_flatten(d)
    return [(MappingKey(k), v) for k, v in zip(context, values)], context


class MappingKey(NamedTuple):
    key: Any


register_pytree_node(tuple, lambda t: (list(t), None), lambda c, _: tuple(c))
register_pytree_node(list, lambda t: (list(t), None), lambda c, _: list(c))
register_pytree_node(dict, _dict_flatten, lambda c, keys: dict(zip(keys, c)))
register_pytree_node(OrderedDict, _dict_flatten, lambda c, keys: OrderedDict(zip(keys, c)))


class TreeSpec:
    def __init__(self, type, context, children_specs):  # noqa: A002 - torch's name
        self.type, self.context, self.children_specs = type, context, children_specs
        self.num_leaves = sum(c.num_leaves for c in children_specs)

    def is_leaf(self) -> bool:
        return False

    def unflatten(self, leaves):
        return tree_unflatten(leaves, self)

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and type(self) is type(other) and self.type is other.type
                and self.context == other.context and self.children_specs == other.children_specs)

    def __repr__(self):
        return f"TreeSpec({getattr(self.type, '__name__', self.type)}, {self.context!r}, {self.children_specs!r})"


class LeafSpec(TreeSpec):
    def __init__(self):
        self.type, self.context, self.children_specs, self.num_leaves = None, None, [], 1

    def is_leaf(self) -> bool:
        return True

    def __repr__(self):
        return "*"


def _node_of(tree):
    t = type(tree)
    if t in SUPPORTED_NODES:
        return t, SUPPORTED_NODES[t]
    if isinstance(tree, tuple) and hasattr(t, "_fields"):  # namedtuple
        return t, _Node(lambda x: (list(x), type(x)), lambda c, cls: cls(*c), None)
    return None, None


def tree_flatten(tree, is_leaf=None):
    leaves: list = []

    def go(node):
        if is_leaf is not None and is_leaf(node):
            leaves.append(node)
            return LeafSpec()
        t, entry = _node_of(node)
        if entry is None:
            leaves.append(node)
            return LeafSpec()
        children, context = entry.flatten(node)
        return TreeSpec(t, context, [go(c) for c in children])

    spec = go(tree)
    return leaves, spec


def tree_unflatten(leaves, treespec: TreeSpec):
    it = iter(leaves)

    def go(spec):
        if spec.is_leaf():
            return next(it)
        children = [go(c) for c in spec.children_specs]
        if spec.type in SUPPORTED_NODES:
            return SUPPORTED_NODES[spec.type].unflatten(children, spec.context)
        return spec.context(*children)  # namedtuple: the context is its class

    return go(treespec)


def tree_leaves(tree, is_leaf=None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None) -> TreeSpec:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func, tree, *rests, is_leaf=None):
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [tree_leaves(r, is_leaf) for r in rests]
    return tree_unflatten([func(x, *xs) for x, *xs in zip(leaves, *others)], spec)


def tree_map_only(type_or_types, func, tree, is_leaf=None):
    return tree_map(lambda x: func(x) if isinstance(x, type_or_types) else x, tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None) -> bool:
    return all(map(pred, tree_leaves(tree, is_leaf)))


def tree_any(pred, tree, is_leaf=None) -> bool:
    return any(map(pred, tree_leaves(tree, is_leaf)))


del namedtuple
