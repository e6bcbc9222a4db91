"""Event streams in gzip: the CRC arithmetic, a stream of shared page segments that decodes
write by write to exactly the identity stream, and the host choosing it by Accept-Encoding."""

from __future__ import annotations

import asyncio
import gzip
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from openwop_client.wire_id import project_id

from openwop_eval.server import feed
from openwop_eval.server.feed import Page
from openwop_eval.server.sse_gzip import (
    GzipStream,
    Packed,
    accepts_gzip,
    combine,
    pack,
    shift_of,
)
from tests.server.inprocess import GATE_SUITE, MOCK, AppHost

pages = st.lists(st.binary(max_size=3000), max_size=8)


@given(st.binary(max_size=2000), st.binary(max_size=2000))
def test_crc_combine_is_the_crc_of_the_concatenation(a: bytes, b: bytes) -> None:
    assert combine(zlib.crc32(a), zlib.crc32(b), shift_of(len(b))) == zlib.crc32(a + b)


def test_shift_of_a_large_length_matches_zlib() -> None:
    a, b = b"event stream" * 7, bytes(range(256)) * 4099  # over a MB, odd length
    assert combine(zlib.crc32(a), zlib.crc32(b), shift_of(len(b))) == zlib.crc32(a + b)


@given(pages)
def test_a_stream_of_segments_is_one_gzip_member_that_decodes_write_by_write(
    texts: list[bytes],
) -> None:
    stream, decoder = GzipStream(), zlib.decompressobj(wbits=31)
    sent, decoded = b"", b""
    for i, text in enumerate(texts):
        part = stream.send(pack(text))
        sent += part
        decoded += decoder.decompress(part)
        assert decoded == b"".join(texts[: i + 1])  # nothing held back
    last = stream.end()
    decoded += decoder.decompress(last)
    assert decoder.eof
    assert not decoder.unused_data
    assert gzip.decompress(sent + last) == b"".join(texts)  # the trailer's CRC and size hold


def test_subscribers_at_different_cursors_share_the_same_segments() -> None:
    shared = [pack(b"id: %d\nevent: e\ndata: {}\n\n" % i) for i in range(4)]
    early, late = GzipStream(), GzipStream()
    whole = b"".join(early.send(p) for p in shared) + early.end()
    tail = b"".join(late.send(p) for p in shared[2:]) + late.end()
    assert gzip.decompress(whole).count(b"id: ") == 4
    assert gzip.decompress(tail).startswith(b"id: 2\n")
    assert whole[:-8].endswith(tail[10:-8])  # between header and trailer: the same bytes


def test_an_empty_stream_is_a_valid_member() -> None:
    assert gzip.decompress(GzipStream().end()) == b""


@pytest.mark.parametrize(
    ("header", "gzip_ok"),
    [
        ("gzip", True),
        ("GZip", True),
        ("x-gzip", True),
        ("gzip, deflate, br", True),
        ("br;q=1.0, gzip;q=0.5", True),
        ("*", True),
        ("gzip;q=0", False),
        ("gzip;q=0.000", False),
        ("gzip;q=0, *", False),
        ("*;q=0", False),
        ("identity", False),
        ("deflate, br", False),
        ("gzip;q=banana", False),
        ("", False),
        (None, False),
        (",;=;,,,q=", False),
        ("br, " * 64 + "gzip", False),  # past the first 64 entries: not read
        ("br, " * 63 + "gzip", True),
    ],
)
def test_accept_encoding(header: str | None, gzip_ok: bool) -> None:
    assert accepts_gzip(header) is gzip_ok


def test_the_host_streams_gzip_only_to_a_client_that_accepts_it(app: AppHost) -> None:
    run_id = app.run_to_end(GATE_SUITE, MOCK)
    url = f"/runs/{project_id(run_id)}/events"
    with app.client() as c:
        with c.stream("GET", url, headers={"Accept-Encoding": "identity"}) as plain:
            assert "content-encoding" not in plain.headers
            assert plain.headers["vary"] == "Accept-Encoding"
            text = b"".join(plain.iter_raw())
        with c.stream("GET", url, headers={"Accept-Encoding": "gzip"}) as packed:
            assert packed.headers["content-encoding"] == "gzip"
            raw = b"".join(packed.iter_raw())
    assert text.startswith(b"retry: 1000\n\n")
    assert b"event: run.completed\n" in text
    assert gzip.decompress(raw) == text  # the same frames, in one valid member
    assert len(raw) < len(text)


def test_a_large_page_is_compressed_once_for_every_stream_even_one_that_leaves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []

    def counted(text: bytes) -> Packed:
        calls.append(len(text))
        return pack(text)

    monkeypatch.setattr(feed, "pack", counted)
    text = b"id: 1\nevent: e\ndata: {}\n\n" * 5000  # over PACK_INLINE: a worker thread
    page = Page(0, 1, 1, False, text)

    async def streams() -> list[Packed]:
        leaving = asyncio.ensure_future(page.packed())
        staying = [asyncio.ensure_future(page.packed()) for _ in range(3)]
        await asyncio.sleep(0)
        leaving.cancel()
        return list(await asyncio.gather(*staying))

    got = asyncio.run(streams())
    assert len(text) >= feed.PACK_INLINE
    assert calls == [len(text)]
    assert all(p is got[0] for p in got)
    one = GzipStream()
    assert gzip.decompress(one.send(got[0]) + one.end()) == text
