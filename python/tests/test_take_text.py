"""Takes of free text (issue 14, item 5), in whatever encoding the cascade
picks for it (zstd frames or FSST by default): takes match cold and warm; a
take over a damaged block names the column and the row group while intact
rows still read; a file truncated while it is open gives an error to the
take, never a signal."""
import os

import numpy as np
import pyarrow as pa
import pytest

import quiver
import spec_decoder as sd
from test_hostile import assert_no_signal, run_child

pytestmark = pytest.mark.timeout(180)

RG = 32768


def sentences(n, seed):
    """Text like TPC-H's comments: rows of one or two phrases drawn from a
    few thousand, over a vocabulary of made-up words (long repeats: zstd
    beats FSST's 8-byte symbols by far)."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = ["".join(rng.choice(letters, int(rng.integers(3, 11)))) for _ in range(400)]
    phrases = [" ".join(vocab[j] for j in rng.integers(0, len(vocab), int(rng.integers(3, 7))))
               for _ in range(3000)]
    pick = rng.integers(0, len(phrases), (n, 2))
    two = rng.random(n) < 0.5
    return [phrases[a] + (" " + phrases[b] if t else "") for (a, b), t in zip(pick, two)]


@pytest.fixture(scope="module")
def text_file(tmp_path_factory):
    n = 3 * RG
    t = pa.table({"id": np.arange(n, dtype=np.int64), "c": pa.array(sentences(n, 5))})
    p = tmp_path_factory.mktemp("text") / "text.qvr"
    quiver.write(t, p, row_group_rows=RG)
    return p, t


def test_text_takes_match(text_file):
    p, t = text_file
    rows = np.sort(np.random.default_rng(1).choice(t.num_rows, 100, replace=False))
    with quiver.open(p) as q:
        for _ in range(2):  # cold, then warm (the take cache's readers)
            got = q.take(rows)
            assert got.column("c").to_pylist() == t.column("c").take(rows).to_pylist()
            assert got.column("id").to_pylist() == rows.tolist()


def test_corrupt_frame_block_names_column_and_block(text_file, tmp_path):
    p, t = text_file
    f = sd.open_file(p)
    seg = f.row_groups[1].chunks[f.columns[1].node].segments[2]
    bad = tmp_path / "bad.qvr"
    data = bytearray(open(p, "rb").read())
    at = seg.offset + seg.length - 100  # in the last frames of row group 1
    data[at] ^= 0x5A
    bad.write_bytes(bytes(data))
    last = 2 * RG - 1  # the last row of row group 1
    with quiver.open(bad) as q:
        with pytest.raises(quiver.CorruptFileError) as e:
            q.take([5, last])
        msg = str(e.value)
        assert "checksum mismatch" in msg and "'c'" in msg and "row group 1" in msg, msg
        # Rows whose frames are intact still read, in the same and other row groups.
        ok = q.take([5, RG + 3, 2 * RG + 7])
        assert ok.column("c").to_pylist() == t.column("c").take([5, RG + 3, 2 * RG + 7]).to_pylist()


def test_truncated_during_take_is_an_error_not_a_signal(text_file, tmp_path):
    p, _ = text_file
    q = tmp_path / "shrink.qvr"
    q.write_bytes(open(p, "rb").read())
    rc, out, err = run_child("""
        import os, sys, quiver
        p = sys.argv[1]
        f = quiver.open(p)
        f.take([1, 40000])
        os.truncate(p, os.path.getsize(p) // 3)
        try:
            f.take([70000, 90000])
            print("no error")
        except quiver.QuiverError as e:
            print(type(e).__name__)
    """, q)
    assert_no_signal(rc, err)
    assert rc == 0, err
    assert out.strip() in ("CorruptFileError", "QuiverIOError", "IOError", "OSError") or \
        out.strip().endswith("Error"), out
    assert "no error" not in out
