"""A first look at candle_bind: torch-style tensors computed by Candle."""

import candle_bind as torch

torch.manual_seed(0)
x = torch.randn(4, 8)
w = torch.arange(8 * 3, dtype=torch.float32).reshape(8, 3) / 10
logits = x @ w
probs = logits.softmax(dim=-1)

print("x.shape         ", x.shape)
print("logits          ", logits)
print("probs.sum(dim=1)", probs.sum(dim=1))
values, indices = probs.max(dim=1)
print("argmax          ", indices)
print("mask any        ", (probs > 0.5).any().item())
print("int promotion   ", torch.tensor([1, 2, 3]) / 2)
print("numpy export    ", probs.numpy().dtype, probs.numpy().shape)
print("reductions      ", x.mean(), x.std(dim=0, keepdim=True).shape, x.var(unbiased=False))
print("shape ops       ", x.view(2, -1).t().contiguous().shape, torch.cat([x, x], dim=1).shape)
