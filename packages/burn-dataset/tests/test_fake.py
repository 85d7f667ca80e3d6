"""FakeDataset: seeded, shape and dtype."""

import numpy as np

from burn_dataset import FakeDataset


def test_fake_is_seeded_and_order_independent():
    a = FakeDataset(5, (2, 3), seed=1)
    b = FakeDataset(5, (2, 3), seed=1)
    assert a[4].shape == (2, 3) and a[4].dtype == np.float32
    np.testing.assert_array_equal(a[4], b.get_many([4, 0])[0])
    assert not np.array_equal(a[0], FakeDataset(5, (2, 3), seed=2)[0])
    assert not np.array_equal(a[0], a[1])
    assert len(list(a)) == 5


def test_fake_dtypes():
    assert FakeDataset(1, (4,), dtype=np.uint8)[0].dtype == np.uint8
    assert FakeDataset(1, (4,), dtype=bool)[0].dtype == np.bool_
    x = FakeDataset(1, (1000,), dtype=np.float64)[0]
    assert x.dtype == np.float64 and 0 <= x.min() and x.max() < 1
