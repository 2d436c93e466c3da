"""accelerate with a tiny BERT: what transformers does through accelerate at load time
(device_map, low_cpu_mem_usage) and accelerate's own big-model API (init_empty_weights,
load_checkpoint_and_dispatch, hooks, Accelerator.prepare) on one CPU.

    python accelerate_load.py MODEL_DIR [section ...]   |   python -m candle_bind run accelerate_load.py MODEL_DIR
"""

import sys
import tempfile

import accelerate
import torch
import transformers
from accelerate.hooks import ModelHook, add_hook_to_module, remove_hook_from_module
from accelerate.utils import compute_module_sizes
from transformers import AutoConfig, AutoModel

from common import main, section

IDS = [[2, 45, 17, 88, 9, 31, 64, 3]]


def hidden(model):
    return model(input_ids=torch.tensor(IDS)).last_hidden_state


@section
def imported(path):
    yield "accelerate_available", transformers.utils.is_accelerate_available()
    yield "has_init_empty_weights", callable(accelerate.init_empty_weights)


@section
def device_map(path):
    """from_pretrained's accelerate paths: each loads the same weights onto the CPU."""
    for name, kwargs in [("plain", {}), ("cpu", {"device_map": "cpu"}), ("auto", {"device_map": "auto"}),
                         ("dict", {"device_map": {"": "cpu"}}), ("low_cpu_mem", {"low_cpu_mem_usage": True})]:
        model = AutoModel.from_pretrained(path, **kwargs).eval()
        yield f"{name}_devices", sorted({p.device.type for p in model.parameters()})
        yield f"{name}_hidden", hidden(model)


@section
def empty_weights(path):
    """A model built with no memory (meta device), then filled and placed by accelerate."""
    config = AutoConfig.from_pretrained(path)
    with accelerate.init_empty_weights():
        model = transformers.BertModel(config)
    yield "built_on", sorted({p.device.type for p in model.parameters()})
    model = accelerate.load_checkpoint_and_dispatch(model, path, device_map="auto").eval()
    yield "loaded_on", sorted({p.device.type for p in model.parameters()})
    yield "hidden", hidden(model)


@section
def hooks(path):
    """accelerate.hooks replaces a module's forward around the original one."""
    model = AutoModel.from_pretrained(path).eval()
    calls = []

    class Count(ModelHook):
        def pre_forward(self, module, *args, **kwargs):
            calls.append(type(module).__name__)
            return args, kwargs

    add_hook_to_module(model.pooler, Count())
    model(input_ids=torch.tensor(IDS))
    remove_hook_from_module(model.pooler)
    model(input_ids=torch.tensor(IDS))
    yield "calls", calls


@section
def accelerator(path):
    acc = accelerate.Accelerator(cpu=True)
    model = acc.prepare(AutoModel.from_pretrained(path).eval())
    yield "device", str(acc.device)
    yield "num_processes", acc.num_processes
    yield "unwrapped", type(acc.unwrap_model(model)).__name__
    yield "hidden", hidden(model)



@section
def offload(path):
    """Big-model inference past the memory budget: infer_auto_device_map splits the model between the
    CPU and disk (the disk part is memory-mapped from numpy files and moved in at each forward),
    cpu_offload's hooks, init_on_device and load_checkpoint_in_model."""
    config = AutoConfig.from_pretrained(path)
    with accelerate.init_empty_weights():
        model = transformers.BertModel(config)
    size = compute_module_sizes(model)[""]
    yield "size", size
    device_map = accelerate.infer_auto_device_map(model, max_memory={"cpu": size * 2 // 3, "disk": 10**9},
                                                  no_split_module_classes=["BertLayer"])
    yield "device_map", sorted((k, str(v)) for k, v in device_map.items())
    with tempfile.TemporaryDirectory() as folder:
        model = accelerate.load_checkpoint_and_dispatch(model, path, device_map=device_map, offload_folder=folder)
        yield "disk_hidden", hidden(model.eval())
    model = accelerate.cpu_offload(AutoModel.from_pretrained(path).eval(), execution_device=torch.device("cpu"))
    yield "cpu_offload_hidden", hidden(model)
    with accelerate.init_on_device(torch.device("meta")):
        model = transformers.BertModel(config)
    yield "init_on_device", sorted({p.device.type for p in model.parameters()})
    accelerate.load_checkpoint_in_model(model, path, device_map={"": "cpu"})
    yield "load_checkpoint_in_model_hidden", hidden(model.eval())


if __name__ == "__main__":
    main(sys.argv[1])
