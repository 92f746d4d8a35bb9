"""Fuzz harness of a Redis connection's decoding (dcpinspect/families/redis/replication/resp.py's
framer, resync.py's resynchronisation, inline.py's splitting, session.py with
pairing.py's pairing): ``check_resp(data)``.

The first byte of the fuzzer's input says whether the direction is seen from its start or
joined mid-way, a chunk size, and whether the framers know their direction (the client's
then resynchronises on inline commands too, the server's on replies that pair with the
client's commands, given to a session first); the second where the rest splits into what
the client sends and what the server sends. For any input:

- the framer raises nothing, and its frames and skipped ranges cover each direction's
  bytes exactly once, in order, however the bytes are cut (fed whole and in chunks, the
  same frames);
- it holds no more than the frame cap and the resynchronisation's look-ahead past what a
  frame needs, whatever the lengths claim;
- the session decodes both directions' frames, interleaved, without raising, and every
  reply it pairs names a command it was given, in order;
- every record's JSON Lines objects and title are text the outputs can print.

Run as a campaign with ``python3 fuzz/resp.py`` (fuzz/campaign.py's options); the test
suite runs it in tests/test_fuzz_resp.py.
"""

from __future__ import annotations

CHUNKS = (None, 1, 2, 3, 7, 64)


def _frames(data: bytes, synced: bool, chunk: int | None, direction: str = "", session=None) -> tuple[list, int]:
    from dcpinspect.families.redis.replication.resp import RespFramer

    framer = RespFramer(synced)
    if direction:
        framer.follows(direction, lambda: session)
    out, held = [], 0
    if chunk is None:
        framer.carried(len(data), 5)
        out += framer.feed(data)
    else:
        for i in range(0, len(data), chunk):
            framer.carried(len(data[i:i + chunk]), 5)
            out += framer.feed(data[i:i + chunk])
            held = max(held, framer.buffered)
    return out + framer.close(), held


def _signature(items: list) -> list:
    from dcpinspect.families.redis.replication.resp import RespFrame

    return [(type(i).__name__, i.offset, len(i.data) if isinstance(i, RespFrame) else i.size,
             repr(i.value) if isinstance(i, RespFrame) else None, getattr(i, "kind", None)) for i in items]


def _covers(items: list, n: int) -> None:
    """Frames and skipped ranges tile the direction's bytes from 0 to ``n``."""
    from dcpinspect.families.redis.replication.resp import RespFrame

    at = 0
    for i in items:
        size = len(i.data) if isinstance(i, RespFrame) else i.size
        if size == 0:  # an error or a passed-over mark at a place: no bytes of its own
            assert i.offset <= at, (i, at)
            continue
        assert i.offset == at, (i, at)
        at += size
    assert at == n, (at, n)


def check_resp(data: bytes) -> None:
    from dcpinspect.families.redis.replication.frames import RespRecord
    from dcpinspect.families.redis.replication.resp import RespFrame
    from dcpinspect.families.redis.replication.session import Replication
    from dcpinspect.limits import RESP_FRAME
    from dcpinspect.outputs.escape import safe
    from dcpinspect.outputs.jsonl import dumps

    from dcpinspect.families.redis.replication.resync import LOOK

    if len(data) < 2:
        return
    first, cut, body = data[0], data[1], data[2:]
    synced = bool(first & 1)
    chunk = CHUNKS[(first >> 1) % len(CHUNKS)]
    directed = bool(first & 0x80)
    waiting = Replication(None, synced)  # the client's commands, for the server's framer to pair with
    at = cut * len(body) // 256
    sides = {"c2s": body[:at], "s2c": body[at:]}
    framed = {}
    for direction, raw in sides.items():
        told = (direction, waiting) if directed else ("", None)
        whole, _ = _frames(raw, synced, None, *told)
        cut_up, held = _frames(raw, synced, chunk, *told)
        assert _signature(whole) == _signature(cut_up), direction
        _covers(whole, len(raw))
        assert held <= RESP_FRAME.value() + LOOK + 2 * (chunk or 1), held
        framed[direction] = [i for i in whole if isinstance(i, RespFrame)]
        if direction == "c2s" and directed:
            for raw_frame in framed[direction]:
                waiting.decode(raw_frame, "c2s", 1000.0, 0)
    session = Replication(None, synced)
    given: list[int] = []
    frame = 0
    queues = {d: list(v) for d, v in framed.items()}
    while queues["c2s"] or queues["s2c"]:  # interleaved: a command, then a reply, ...
        for direction in ("c2s", "s2c"):
            if queues[direction]:
                frame += 1
                rec = session.decode(queues[direction].pop(0), direction, 1000.0 + frame / 1000, frame)
                if isinstance(rec, RespRecord):
                    if rec.role == "command" and direction == "c2s":
                        given.append(frame)
                    if rec.reply_to is not None:
                        assert rec.reply_to in given and rec.latency_ms is not None and rec.latency_ms >= 0
                for row in rec.json_rows():
                    dumps(row)
                safe(rec.title())
                for _, value in rec.table_rows():
                    safe(value)
