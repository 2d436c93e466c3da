"""torch.utils.checkpoint: activation checkpointing only matters for training; here the function runs."""


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default",
               debug=False, preserve_rng_state=True, **kwargs):
    return function(*args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    for f in (functions.children() if hasattr(functions, "children") else functions):
        input = f(input)
    return input


def get_device_states(*args):
    """The GPU RNG states of the devices the tensors live on: none here."""
    return [], []


def set_device_states(devices, states, *, device_type=None) -> None:
    return None
