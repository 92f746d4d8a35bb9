"""Dragonfly's compressed blobs (spec/rdb.md §8.2) inflate a piece at a time: a blob that
inflates a thousandfold is handed to the parser in bounded pieces, stopped at the string
cap, and a frame cut short is a finding, not a partial success."""

from __future__ import annotations

import lz4.frame
import pytest
import zstandard

from dcpinspect.families.redis.rdb import types
from dcpinspect.families.redis.rdb.decoder import INFLATE_PIECE, ZSTD_PIECE, _inflate

BIG = 64 << 20  # zeros: a few KB compressed


@pytest.fixture(scope="module")
def blobs():
    zeros = bytes(BIG)
    return {types.DF_ZSTD_BLOB: zstandard.ZstdCompressor(level=3).compress(zeros),
            types.DF_LZ4_BLOB: lz4.frame.compress(zeros)}


@pytest.mark.parametrize("opcode", [types.DF_ZSTD_BLOB, types.DF_LZ4_BLOB], ids=["zstd", "lz4"])
def test_a_blob_inflates_in_bounded_pieces(blobs, opcode):
    pieces = list(_inflate(opcode, blobs[opcode], BIG))
    assert sum(map(len, pieces)) == BIG and not any(pieces[0][:4096])
    # an LZ4 piece is at most INFLATE_PIECE; a ZSTD piece is what ZSTD_PIECE input bytes make
    assert max(map(len, pieces)) <= (INFLATE_PIECE if opcode == types.DF_LZ4_BLOB else 128 * 1024 * ZSTD_PIECE)
    assert len(pieces) > 1


@pytest.mark.parametrize("opcode", [types.DF_ZSTD_BLOB, types.DF_LZ4_BLOB], ids=["zstd", "lz4"])
def test_a_blob_past_the_cap_stops_there(blobs, opcode):
    seen = 0
    with pytest.raises(ValueError, match="inflates past the RDB string cap"):
        for piece in _inflate(opcode, blobs[opcode], 1 << 20):
            seen += len(piece)
    assert seen <= 1 << 20


@pytest.mark.parametrize("opcode", [types.DF_ZSTD_BLOB, types.DF_LZ4_BLOB], ids=["zstd", "lz4"])
def test_a_frame_cut_short_is_an_error(blobs, opcode):
    with pytest.raises(ValueError, match="cut short"):
        for _ in _inflate(opcode, blobs[opcode][:-8], BIG):
            pass
