"""burn-cube kernels of the vision ops for the cube backends (cpu, wgpu, cuda), registered on
import: `labelling` (connected components), `window` (filter2d, erosion, dilation), `ops` (the
`VisionOps` subclass)."""

from burn_vision.cube import ops as _ops  # noqa: F401  (registers the cube backends' ops)
