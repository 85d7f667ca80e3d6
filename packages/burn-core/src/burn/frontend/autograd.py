"""Gradient tracking: require_grad, backward, grad, detach (on autodiff devices)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from burn.errors import AutodiffError, DeviceError
from burn.frontend.base import TensorBase, make

if TYPE_CHECKING:
    from burn.autodiff import Gradients
    from burn.backend.protocol import AutodiffBackend
    from burn.device import Device
    from burn.frontend.tensor import Tensor


class AutogradMixin(TensorBase):
    """Autodiff methods of `burn.Tensor`."""

    __slots__ = ()

    def _tracked_float(self, op: str) -> AutodiffBackend:
        """This tensor's autodiff backend; AutodiffError unless this is a float tensor on an
        autodiff device."""
        if not self._bk.is_autodiff:
            raise AutodiffError(op, "tensor is not on an autodiff device (use "
                                "device.autodiff())", device=str(self._device),
                                shape=self.shape)
        if self._k != "float_":
            raise AutodiffError(op, "only float tensors carry gradients",
                                dtype=self._dtype.value, shape=self.shape)
        return cast("AutodiffBackend", self._bk)

    def require_grad(self) -> Tensor:
        """Mark this (leaf) tensor as requiring gradients; returns itself.

        Raises:
            AutodiffError: off an autodiff device, for non-float tensors, or for op results.
        """
        self._prim = self._tracked_float("require_grad").float_require_grad(self._prim)
        return self  # type: ignore[return-value]

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """torch-style `require_grad` (False detaches in place)."""
        if requires_grad:
            return self.require_grad()
        return self._detach_in_place()

    def _detach_in_place(self) -> Tensor:
        if self._k == "float_":
            self._prim = self._bk.detach_values(self._prim)
        return self  # type: ignore[return-value]

    def is_require_grad(self) -> bool:
        """Whether this is a leaf that requires gradients."""
        return (self._bk.is_autodiff and self._k == "float_"
                and cast("AutodiffBackend", self._bk).float_is_require_grad(self._prim))

    @property
    def requires_grad(self) -> bool:
        """`is_require_grad()`, as torch's attribute."""
        return self.is_require_grad()

    def backward(self) -> Gradients:
        """Gradients of this tensor (seeded with ones) for every leaf requiring grad; frees the
        graph.

        Raises:
            AutodiffError: off an autodiff device, for non-float or untracked tensors, or when
                the graph was already freed.
        """
        return self._tracked_float("backward").backward(self._prim)  # type: ignore[no-any-return]

    def grad(self, grads: Gradients) -> Tensor | None:
        """The gradient of this leaf in `grads`, as a tensor on the inner device, or None."""
        return self._grad_tensor("grad", False, grads)

    def grad_remove(self, grads: Gradients) -> Tensor | None:
        """Like `grad`, and remove the gradient from `grads`."""
        return self._grad_tensor("grad_remove", True, grads)

    def _grad_tensor(self, op: str, remove: bool, grads: Gradients) -> Tensor | None:
        backend = self._tracked_float(op)
        fetch = backend.grad_remove if remove else backend.grad
        prim = fetch(self._prim, grads)
        if prim is None:
            return None
        inner = self._device.inner()
        return make(prim, inner, inner.backend.dtype(prim))

    def inner(self) -> Tensor:
        """This tensor on the inner device (the backend under Autodiff), sharing its values and
        cut from the graph; the tensor itself off autodiff devices."""
        if not self._bk.is_autodiff:
            return self  # type: ignore[return-value]
        backend = cast("AutodiffBackend", self._bk)
        prim = backend.float_inner(self._prim) if self._k == "float_" else self._prim
        return make(prim, self._device.inner(), self._dtype)

    @staticmethod
    def from_inner(tensor: Tensor, device: Device) -> Tensor:
        """`tensor` (on `device.inner()`) as an untracked tensor of the autodiff `device`.

        Args:
            tensor: a tensor on the inner device.
            device: an autodiff device whose inner device holds `tensor`.
        Returns:
            The tensor on `device`, sharing the values.
        Raises:
            DeviceError: when `tensor` is not on `device.inner()`.
        """
        if not device.is_autodiff or tensor.device != device.inner():
            raise DeviceError("from_inner", "tensor must live on the inner device of an "
                              "autodiff device", tensor_device=str(tensor.device),
                              device=str(device))
        prim = tensor._prim
        if tensor._k == "float_":
            prim = cast("AutodiffBackend", device.backend).float_from_inner(prim)
        return make(prim, device, tensor._dtype)

    def detach(self) -> Tensor:
        """The same values cut from the autodiff graph."""
        return self._wrap(self._prim)._detach_in_place()
