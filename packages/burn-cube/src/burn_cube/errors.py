"""Typed errors raised while compiling or launching kernels."""

from __future__ import annotations


class KernelError(Exception):
    """Base error for a kernel; the message names the kernel and, when known, the source line.

    Args:
        message: What went wrong.
        kernel: Name of the kernel function.
        location: ``file:line`` of the offending source line.
        source_line: Text of the offending source line.
    """

    def __init__(
        self,
        message: str,
        kernel: str | None = None,
        location: str | None = None,
        source_line: str | None = None,
    ) -> None:
        self.kernel = kernel
        self.location = location
        self.source_line = source_line
        head = f"kernel '{kernel}'" if kernel else "kernel"
        if location:
            head += f" at {location}"
        text = f"{head}: {message}"
        if source_line:
            text += f"\n    {source_line.strip()}"
        super().__init__(text)


class CompileError(KernelError):
    """The kernel cannot be expressed in the IR, or the target compiler rejected it."""


class LaunchError(KernelError):
    """Bad arguments, dtypes or launch sizes, or an out-of-bounds access detected at run time."""


class MissingCompilerError(CompileError):
    """No usable C compiler (or GPU toolchain) was found for a runtime."""


class RuntimeUnavailableError(KernelError):
    """A runtime was requested whose library or device is not available."""


class DeviceIndexError(RuntimeUnavailableError):
    """A runtime was requested with a device index it does not have."""
