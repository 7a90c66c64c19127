"""A filter's surviving rows of a list<string> column (a take of the list's
offsets, then of its elements' strings, dictionary-encoded: the dictionary's
take copies just the entries of the rows asked for) equal pyarrow's own
filter of the same table: nulls in the lists, in their elements and in the
filter column, rows on both sides of row-group boundaries, dense and sparse
selections, whole vectors of elements, small dictionaries and ones large
enough to be read entry by entry."""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import quiver


def _table(n, vocab_size, seed):
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}-{'x' * (i % 40)}" for i in range(vocab_size)], dtype=object)
    lens = rng.integers(0, 6, n)
    off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    # Large vocabularies uniform: a dictionary of thousands of entries.
    pick = rng.integers(0, vocab_size, off[-1]) if vocab_size >= 1000 else rng.zipf(1.3, off[-1])
    words = vocab[pick % vocab_size]
    elems = pa.array(words, pa.string(), mask=rng.random(off[-1]) < 0.05)
    tags = pa.ListArray.from_arrays(pa.array(off), elems,
                                    mask=pa.array(rng.random(n) < 0.07))
    # Nulls in the first half only: past it, a filter passing every row
    # takes whole vectors of elements.
    score = pa.array(np.round(rng.random(n) * 100, 2),
                     mask=(rng.random(n) < 0.04) & (np.arange(n) < n // 2))
    return pa.table({"id": np.arange(n, dtype=np.int64), "score": score, "tags": tags})


def _expected(t, lo, hi, below):
    m = pc.and_(pc.and_(pc.greater_equal(t["id"], lo), pc.less(t["id"], hi)),
                pc.less(t["score"], below))
    return t.filter(m).select(["id", "tags"]).combine_chunks()


@pytest.mark.parametrize("vocab_size,below", [(40, 35.0), (40, 2.0), (300, 90.0), (40, 101.0),
                                              (2000, 0.5), (2000, 30.0), (60000, 0.3)])
@pytest.mark.parametrize("threads", [quiver.SCAN_SYNC, 2])
def test_filter_takes_list_strings(tmp_path, vocab_size, below, threads):
    n = 20000
    t = _table(n, vocab_size, seed=vocab_size + int(below))
    p = str(tmp_path / "t.qvr")
    quiver.write(t, p, row_group_rows=3000)
    # Ranges that start and end inside row groups and across their edges.
    for lo, hi in [(0, n), (2999, 3001), (2500, 9100), (5999, 6000), (9000, 17000), (17000, n)]:
        with quiver.open(p) as f:
            got = f.to_arrow(columns=["id", "tags"], threads=threads,
                             filter=f"id >= {lo} AND id < {hi} AND score < {below}")
        exp = _expected(t, lo, hi, below)
        assert got.num_rows == exp.num_rows
        assert got.combine_chunks().equals(exp), (lo, hi)


def test_filter_takes_from_large_dictionary(tmp_path):
    """Few rows of one row group whose dictionary has thousands of entries:
    the entries are decoded one by one, not the whole dictionary."""
    n = 200000
    t = _table(n, 20000, seed=7)
    p = str(tmp_path / "t.qvr")
    quiver.write(t, p, row_group_rows=n)
    for below in (0.2, 0.05):
        with quiver.open(p) as f:
            got = f.to_arrow(columns=["id", "tags"], threads=quiver.SCAN_SYNC,
                             filter=f"id >= 0 AND id < {n} AND score < {below}")
        assert got.combine_chunks().equals(_expected(t, 0, n, below))
