"""Op records: shapes and dtypes inferred without running the op, compared with what PyTorch
computes; inconsistent records refused where they are made, naming the op."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from burn.backend.options import ConvOptions, PoolOptions
from burn.dtype import DType
from burn.errors import BurnError, BurnIndexError, DTypeError, ShapeError
from burn.ir import OpIR, TensorIR, make_record, new_id


def t(*shape: int | None, dtype: DType = DType.float32) -> TensorIR:
    return TensorIR(new_id(), tuple(shape), dtype)


def only(record: OpIR) -> TensorIR:
    (out,) = record.outputs or ()
    assert out is not None
    return out


def test_binary_broadcasts_like_torch():
    rec = make_record("float_add", {"lhs": t(4, 1, 3), "rhs": t(5, 1)})
    expected = (torch.zeros(4, 1, 3) + torch.zeros(5, 1)).shape
    assert only(rec).shape == tuple(expected) and only(rec).dtype is DType.float32
    assert only(rec).id not in (rec.inputs["lhs"].id, rec.inputs["rhs"].id)  # type: ignore


def test_comparison_gives_bool_and_argmax_int64():
    assert only(make_record("float_lower", {"lhs": t(2, 3), "rhs": t(3)})).dtype is DType.bool
    arg = only(make_record("float_argmax", {"x": t(2, 3, 4)}, {"dim": 1}))
    assert arg.shape == (2, 1, 4) and arg.dtype is DType.int64


def test_matmul_conv_and_pool_shapes_match_torch():
    rec = make_record("float_matmul", {"lhs": t(7, 1, 2, 3), "rhs": t(5, 3, 4)})
    assert only(rec).shape == tuple(torch.matmul(torch.zeros(7, 1, 2, 3),
                                                 torch.zeros(5, 3, 4)).shape)
    x, w = torch.zeros(2, 3, 11, 9), torch.zeros(8, 3, 3, 2)
    opts = ConvOptions(stride=(2, 1), padding=(1, 0), dilation=(1, 2))
    rec = make_record("conv", {"x": t(*x.shape), "weight": t(*w.shape), "bias": None},
                      {"options": opts})
    ref = torch.nn.functional.conv2d(x, w, stride=(2, 1), padding=(1, 0), dilation=(1, 2))
    assert only(rec).shape == tuple(ref.shape)
    pool = PoolOptions(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), dilation=(1, 1),
                       ceil_mode=True)
    values, indices = make_record("max_pool_with_indices", {"x": t(*x.shape)},
                                  {"options": pool}).outputs or ()
    ref = torch.nn.functional.max_pool2d(x, 3, 2, 1, ceil_mode=True)
    assert values and indices and values.shape == indices.shape == tuple(ref.shape)
    assert indices.dtype is DType.int64


def test_creation_and_casts_take_the_dtype_argument():
    rec = make_record("float_full", {}, {"shape": (2, 0), "value": 1.0, "dtype": DType.float16,
                                         "device": None})
    assert only(rec).shape == (2, 0) and only(rec).dtype is DType.float16
    rec = make_record("bool_from_data", {}, {"data": np.zeros((3,), bool), "device": None})
    assert only(rec).dtype is DType.bool
    rec = make_record("int_into_float", {"x": t(3, dtype=DType.int32)}, {"dtype": DType.float64})
    assert only(rec).dtype is DType.float64
    assert only(make_record("int_arange", {}, {"start": 2, "end": 11, "step": 3,
                                                "dtype": DType.int64, "device": None})
                ).shape == (len(range(2, 11, 3)),)


def test_backward_with_an_absent_bias_has_no_bias_gradient():
    opts = ConvOptions(stride=(1,), padding=(0,), dilation=(1,))
    rec = make_record("conv_backward", {"x": t(2, 3, 8), "weight": t(4, 3, 3), "bias": None,
                                        "grad": t(2, 4, 6)}, {"options": opts})
    gx, gw, gb = rec.outputs or ()
    assert gx and gw and gx.shape == (2, 3, 8) and gw.shape == (4, 3, 3) and gb is None


def test_data_dependent_size_is_none_and_matches_any_given_size():
    rec = make_record("bool_argwhere", {"x": t(4, 5, dtype=DType.bool)})
    assert only(rec).shape == (None, 2)
    given = (TensorIR(new_id(), (7, 2), DType.int64),)
    assert make_record("bool_argwhere", {"x": t(4, 5, dtype=DType.bool)}, outputs=given)


@pytest.mark.parametrize("build, error, words", [
    (lambda: make_record("float_add", {"lhs": t(2, 3), "rhs": t(4)}), ShapeError,
     "float_add: shapes do not broadcast"),
    (lambda: make_record("float_add", {"lhs": t(2), "rhs": t(2, dtype=DType.float64)}),
     DTypeError, "float_add: tensor inputs must share one dtype"),
    (lambda: make_record("float_exp", {"x": t(2, dtype=DType.int64)}), DTypeError,
     "float_exp: `x` must be a float tensor"),
    (lambda: make_record("float_sum_dim", {"x": t(2, 3)}, {"dim": 2}), BurnIndexError,
     "float_sum_dim: dim out of range"),
    (lambda: make_record("float_reshape", {"x": t(2, 3)}, {"shape": (4, 2)}), ShapeError,
     "float_reshape: reshape must keep"),
    (lambda: make_record("float_matmul", {"lhs": t(2, 3), "rhs": t(4, 2)}), ShapeError,
     "float_matmul"),
    (lambda: make_record("float_exp", {"x": t(2)}, outputs=(t(3),)), ShapeError,
     "float_exp: record's outputs differ"),
    (lambda: make_record("float_exp", {"x": t(2)}, outputs=(t(2, dtype=DType.float16),)),
     ShapeError, "float_exp: record's outputs differ"),
    (lambda: make_record("float_exp", {}), BurnError, "float_exp: parameters do not match"),
    (lambda: make_record("float_exp", {"x": t(2), "y": t(2)}), BurnError, "unexpected=['y']"),
    (lambda: make_record("float_frobnicate", {}), BurnError, "not an op of the op table"),
    (lambda: make_record("float_cat", {"xs": (t(2, 3), t(2, 4))}, {"dim": 0}), ShapeError,
     "float_cat: shapes differ outside the cat dim"),
    (lambda: make_record("float_add", {"lhs": t(2), "rhs": "x"}), BurnError,
     "float_add: `rhs` must be a TensorIR"),
    (lambda: make_record("float_add", {"lhs": t(2), "rhs": None}), BurnError,
     "float_add: `rhs` must be a TensorIR"),
    (lambda: make_record("float_add", {"lhs": t(-1), "rhs": t(2)}), ShapeError,
     "float_add: `lhs` has a malformed shape"),
    (lambda: make_record("float_add", {"lhs": TensorIR(1, (2,), "float32"), "rhs": t(2)}),
     DTypeError, "float_add: `lhs` has no burn dtype"),
    (lambda: make_record("float_cat", {"xs": t(2)}, {"dim": 0}), BurnError,
     "float_cat: `xs` must be a tuple of TensorIR"),
])
def test_inconsistent_records_are_refused_where_made(build, error, words):
    with pytest.raises(error, match=words.replace("[", r"\[").replace("]", r"\]")):
        build()


def test_record_text_names_op_and_tensors():
    rec = make_record("float_mul_scalar", {"lhs": t(2, 2)}, {"rhs": 3.0})
    text = str(rec)
    assert text.startswith("float_mul_scalar(lhs=#") and "[2, 2]:float32" in text
