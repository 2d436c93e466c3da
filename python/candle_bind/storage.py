"""torch.storage: what code asks of the buffer behind a tensor, its address and byte size (huggingface_hub's
save_pretrained groups tensors that share memory, tied weights, by them). A storage here describes the
buffer; reading or resizing it element by element is not supported (use the tensor)."""

from __future__ import annotations

__all__ = ["UntypedStorage", "TypedStorage"]


class UntypedStorage:
    """`tensor.untyped_storage()`: the tensor's whole buffer, as bytes."""

    def __init__(self, tensor):
        self._tensor = tensor

    @property
    def device(self):
        return self._tensor.device

    def data_ptr(self) -> int:
        return self._tensor._storage_ptr()

    def nbytes(self) -> int:
        return self._tensor._storage_nbytes()

    def size(self) -> int:
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    def __repr__(self):
        return f"{type(self).__name__}(device={self.device}, nbytes={self.nbytes()})"


class TypedStorage(UntypedStorage):
    """`tensor.storage()`: the same buffer counted in elements of the tensor's dtype."""

    @property
    def dtype(self):
        return self._tensor.dtype

    def element_size(self) -> int:
        return self._tensor.element_size()

    def size(self) -> int:
        return self.nbytes() // self.element_size()

    def __len__(self) -> int:
        return self.size()

    def untyped(self) -> UntypedStorage:
        return UntypedStorage(self._tensor)

    _untyped_storage = property(untyped)
