"""Connected-component labelling kernels of the cube backends.

- `cpu`: two sequential passes per image (one cube each, images in parallel), as OpenCV's
  scan-based labellers: pass one gives each foreground pixel a provisional label from its
  already-labelled neighbours by a decision tree (Wu, Otoo and Suzuki: the north neighbour
  alone decides when it is set, since it touches every other one under 8-connectivity) and
  records equivalences in a union-find table linked towards the smaller root; the table is then
  flattened to compact labels, numbered in raster order of each component's first pixel. Pass
  two writes the final int64 labels and gathers area and bounds in the same sweep.
- `wgpu` / `cuda`: label equivalence (Kalentev et al. 2011) without atomics: each pixel starts
  with its raster index + 1; a scan lowers the label its label points at to the least label
  around it (racing writes only lose updates that a later round redoes), pointer jumping then
  makes every label a root, until a scan changes nothing. A component's label is its first
  pixel's index + 1.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import burn
from burn import Tensor
from burn_vision.cube.primitives import cube_count, empty, launch
from burn_vision.stats import ConnectedStats, Connectivity

#: units per cube of the GPU kernels
CUBE_DIM = 256
#: statistics rows of the cpu kernel's [5, B, L + 1] output, in `ConnectedStats` order
STATS = ("area", "left", "top", "right", "bottom")


def provisional_capacity(h: int, w: int, connectivity: Connectivity) -> int:
    """The most provisional labels pass one can make (new labels need a pixel with no
    labelled neighbour before it), plus slot 0 (the background)."""
    if connectivity == 8:
        return ((h + 1) // 2) * ((w + 1) // 2) + 1
    return (h * w + 1) // 2 + 1


@cache
def _scan_kernel(connectivity: Connectivity) -> Any:
    """Pass one: provisional labels (i32 [B, H, W]), the flattened table (i32 [B, M]: final
    label of each provisional one) and the label count per image (i32 [B])."""
    from burn_cube import KernelBuilder, bool_, i32

    b = KernelBuilder(f"cc_scan{connectivity}", cube_dim=1)
    img = b.tensor("img", bool_, rank=3, write=False)
    lab = b.tensor("lab", i32, rank=3, write=True)
    parent = b.tensor("parent", i32, rank=2, write=True)
    count = b.tensor("count", i32, rank=1, write=True)
    h, w = b.scalar("h", i32), b.scalar("w", i32)
    k = b.cast(b.CUBE_POS_X, i32)
    pbase = b.local(i32, k * parent.shape[1])
    n = b.local(i32, 0)

    def read(index: Any, inside: Any) -> Any:
        v = b.local(i32, 0)
        with b.if_(inside):
            b.set(v, lab[index])
        return v

    def root(v: Any) -> Any:
        r = b.local(i32, v)
        with b.while_(parent[pbase + r] != r):
            b.set(r, parent[pbase + r])
        return r

    def union(u: Any, v: Any) -> None:
        ru, rv = root(u), root(v)
        with b.if_(ru < rv):
            parent[pbase + rv] = ru
            parent[pbase + v] = ru
        with b.if_(rv < ru):
            parent[pbase + ru] = rv
            parent[pbase + u] = rv

    def new_label(target: Any) -> None:
        b.set(n, n + 1)
        parent[pbase + n] = n
        b.set(target, n)

    with b.for_range(h) as y:
        row = b.local(i32, (k * h + y) * w)  # lab is dense [B, H, W]; img any view
        pixels = b.local(i32, img.offset + k * img.stride[0] + y * img.stride[1])
        with b.for_range(w) as x:
            label = b.local(i32, 0)
            at = row + x
            with b.if_(img[pixels + x * img.stride[2]]):
                north = read(at - w, y > 0)
                with b.if_(north > 0):
                    b.set(label, north)
                with b.if_(north == 0):
                    west = read(at - 1, x > 0)
                    if connectivity == 4:
                        with b.if_(west > 0):
                            b.set(label, west)
                        with b.if_(west == 0):
                            new_label(label)
                    else:
                        ne = read(at - w + 1, b.and_(y > 0, x + 1 < w))
                        nw = read(at - w - 1, b.and_(y > 0, x > 0))
                        first = b.local(i32, b.select(west > 0, west, nw))
                        with b.if_(first > 0):
                            b.set(label, first)
                            with b.if_(ne > 0):
                                union(first, ne)
                        with b.if_(first == 0):
                            with b.if_(ne > 0):
                                b.set(label, ne)
                            with b.if_(ne == 0):
                                new_label(label)
                if connectivity == 4:
                    with b.if_(north > 0):
                        west4 = read(at - 1, x > 0)
                        with b.if_(b.and_(west4 > 0, west4 != north)):
                            union(north, west4)
            lab[at] = label
    parent[k, 0] = 0  # the background (pass two reads it for label 0)
    final = b.local(i32, 0)
    with b.for_range(1, n + 1) as p:
        up = b.local(i32, parent[k, p])
        with b.if_(up == p):
            b.set(final, final + 1)
            parent[k, p] = final
        with b.if_(up != p):
            parent[k, p] = parent[k, up]
    count[k] = final
    return b.kernel()


@cache
def _relabel_kernel() -> Any:
    """Pass two: final int64 labels and the statistics [5, B, L + 1] (`STATS` order) of every
    label, the background's included; absent labels get zeros. Branch-free per pixel: slot 0
    of the table maps the background to label 0, and every pixel updates its label's row."""
    from burn_cube import KernelBuilder, i32, i64

    b = KernelBuilder("cc_relabel", cube_dim=1)
    lab = b.tensor("lab", i32, rank=3, write=False)
    parent = b.tensor("parent", i32, rank=2, write=False)
    out = b.tensor("out", i64, rank=3, write=True)
    st = b.tensor("stats", i64, rank=3, write=True)
    h, w, slots = b.scalar("h", i32), b.scalar("w", i32), b.scalar("slots", i32)
    k = b.cast(b.CUBE_POS_X, i32)
    # dense [B, H, W] labels in and out, a dense table: flat indexes
    pbase = b.local(i32, k * parent.shape[1])
    field = [b.local(i32, (row * b.cast(st.shape[1], i32) + k) * slots) for row in range(5)]
    area, left, top, right, bottom = field
    with b.for_range(slots) as s:
        for base, init in zip(field, (0, w, h, -1, -1), strict=True):
            st[base + s] = b.cast(init, i64)
    with b.for_range(h) as y:
        yy = b.cast(y, i64)
        row = b.local(i32, (k * h + y) * w)
        with b.for_range(w) as x:
            f = b.local(i32, parent[pbase + lab[row + x]])
            out[row + x] = b.cast(f, i64)
            st[area + f] = st[area + f] + 1
            st[left + f] = b.min(st[left + f], b.cast(x, i64))
            st[right + f] = b.max(st[right + f], b.cast(x, i64))
            st[top + f] = b.min(st[top + f], yy)
            st[bottom + f] = yy
    with b.for_range(slots) as s:
        with b.if_(st[area + s] == 0):
            for base in (left, top, right, bottom):
                st[base + s] = b.cast(0, i64)
    return b.kernel()


def label_cpu(img: Tensor, connectivity: Connectivity, stats: bool
              ) -> tuple[Tensor, ConnectedStats | None]:
    """Compact labels (int64 [B, H, W]) of bool `img` on the cpu backend, and their
    statistics when `stats` (pass two gathers them either way)."""
    bsz, h, w = img.shape
    lab = empty(img, (bsz, h, w), burn.int32)
    parent = empty(img, (bsz, provisional_capacity(h, w, connectivity)), burn.int32)
    count = empty(img, (bsz,), burn.int32)
    launch(img, _scan_kernel(connectivity), (bsz,), 1, img, lab, parent, count, h, w)
    counts = count.cast(burn.int64)
    slots = int(counts.max().item()) + 1
    out = empty(img, (bsz, h, w), burn.int64)
    table = empty(img, (5, bsz, slots), burn.int64)
    launch(img, _relabel_kernel(), (bsz,), 1, lab, parent, out, table, h, w, slots)
    if not stats:
        return out, None
    area, left, top, right, bottom = (table[i] for i in range(len(STATS)))
    return out, ConnectedStats(area, left, top, right, bottom, counts)


@cache
def _init_kernel() -> Any:
    """Each foreground pixel's label is its raster index in its image + 1; background 0."""
    from burn_cube import KernelBuilder, bool_, i32

    b = KernelBuilder("cc_init", cube_dim=CUBE_DIM)
    img = b.tensor("img", bool_, rank=3, write=False)
    lab = b.tensor("lab", i32, rank=1, write=True)
    hw = b.scalar("hw", i32)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < lab.len):
        local = b.cast(pos, i32) % hw
        lab[pos] = b.select(img[b.index_of(img, pos)], local + 1, 0)
    return b.kernel()


@cache
def _scan_equivalence_kernel(connectivity: Connectivity) -> Any:
    """One label-equivalence scan: the label a pixel's label points at drops to the least
    neighbouring label; `changed[0]` is set when anything dropped."""
    from burn_cube import KernelBuilder, i32

    b = KernelBuilder(f"cc_equiv{connectivity}", cube_dim=CUBE_DIM)
    lab = b.tensor("lab", i32, rank=1, write=True)
    changed = b.tensor("changed", i32, rank=1, write=True)
    h, w = b.scalar("h", i32), b.scalar("w", i32)
    pos = b.cast(b.ABSOLUTE_POS, i32)
    with b.if_(pos < b.cast(lab.len, i32)):
        own = b.local(i32, lab[pos])
        with b.if_(own > 0):
            hw = h * w
            local = b.local(i32, pos % hw)
            base = b.local(i32, pos - local)
            y, x = b.local(i32, local // w), b.local(i32, local % w)
            least = b.local(i32, own)
            offsets = [(-1, 0), (1, 0), (0, -1), (0, 1)]
            if connectivity == 8:
                offsets += [(-1, -1), (-1, 1), (1, -1), (1, 1)]
            for dy, dx in offsets:
                inside = b.and_(b.and_(y + dy >= 0, y + dy < h), b.and_(x + dx >= 0, x + dx < w))
                with b.if_(inside):
                    v = lab[pos + dy * w + dx]
                    with b.if_(b.and_(v > 0, v < least)):
                        b.set(least, v)
            with b.if_(least < own):
                target = b.local(i32, base + own - 1)
                lab[target] = b.min(lab[target], least)
                changed[0] = 1
    return b.kernel()


@cache
def _jump_kernel() -> Any:
    """Pointer jumping: every foreground label becomes the root of its chain."""
    from burn_cube import KernelBuilder, i32

    b = KernelBuilder("cc_jump", cube_dim=CUBE_DIM)
    lab = b.tensor("lab", i32, rank=1, write=True)
    hw = b.scalar("hw", i32)
    pos = b.cast(b.ABSOLUTE_POS, i32)
    with b.if_(pos < b.cast(lab.len, i32)):
        label = b.local(i32, lab[pos])
        with b.if_(label > 0):
            base = pos - pos % hw
            up = b.local(i32, lab[base + label - 1])
            with b.while_(up != label):
                b.set(label, up)
                b.set(up, lab[base + label - 1])
            lab[pos] = label
    return b.kernel()


def label_gpu(img: Tensor, connectivity: Connectivity) -> tuple[Tensor, int]:
    """Labels int32 [B, H, W] of bool `img` by label equivalence (first pixel's index + 1 per
    component, 0 for the background) and the number of scans it took."""
    bsz, h, w = img.shape
    total = bsz * h * w
    lab = empty(img, (total,), burn.int32)
    changed = burn.zeros((1,), dtype=burn.int32, device=img.device)
    cubes = (cube_count(total, CUBE_DIM),)
    launch(img, _init_kernel(), cubes, CUBE_DIM, img, lab, h * w)
    scans = 0
    while True:
        changed = burn.zeros((1,), dtype=burn.int32, device=img.device)
        launch(img, _scan_equivalence_kernel(connectivity), cubes, CUBE_DIM, lab, changed, h, w)
        scans += 1
        if not int(changed.item()):
            break
        launch(img, _jump_kernel(), cubes, CUBE_DIM, lab, h * w)
    return lab.reshape(bsz, h, w), scans
