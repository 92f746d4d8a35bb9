"""What ``analyze`` reads and how the work is cut into Spark tasks.

Inputs: local paths, globs and directories, and URIs of any file system pyarrow serves
(``sources/uris.py``); a directory (or an object-store prefix) gives every capture and
snapshot file under it, by content.

Tasks: a capture file of ``size`` bytes wants ``ceil(size / range_size)`` tasks (when
there are fewer files than twice the cores, ``ceil(size / MIN_SHARE)``, for every core to
have work), at most as many as the cluster has cores, the largest shares first. Each such task reads the whole file and decodes the
connections dealt to its part (:class:`~..files.Owners`), as ``--jobs`` workers do: no
packet leaves its task. Reading is cheap next to decoding (the C reader passes the other
parts' records over unmade), but a file read by ``n`` tasks is read ``n`` times: past
:data:`MAX_REREADS` tasks (a file far larger than a machine decodes quickly, on a cluster
of many cores) ``--split auto`` cuts it into byte ranges instead, whose packets Spark
shuffles to their connections (``sources/ranges.py``, ``source.py``): the file is read
once, and its packets cross the network once. ``--split connections`` and ``--split
ranges`` choose one way for every file. A snapshot file (RDB) is one task.
"""

from __future__ import annotations

import gzip
import glob
import os
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from ...sources.capture import CaptureError, looks_like_capture, read_records
from ...sources.ranges import RANGE_SIZE, Range, candidate_ranges, plan_ranges, walk_range
from ...sources.uris import expand as expand_uri
from ...sources.uris import UriError, is_uri, open_binary, shown, size_of

#: the most tasks that each read a whole file (beyond, ``--split auto`` uses ranges)
MAX_REREADS = 8
#: the least bytes of a file a task takes when there are fewer files than cores to fill
MIN_SHARE = 16 << 20
SPLITS = ("auto", "connections", "ranges")
CAPTURE, SNAPSHOT = "capture", "snapshot"
_HEAD = 64


@dataclass
class Plan:
    """The files (in the order given), the tasks that read whole files ``(file_index,
    kind, part, parts)``, the byte ranges of files split by ranges, and the cores."""

    files: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    tasks: list[tuple[int, str, int, int]] = field(default_factory=list)
    ranges: list[Range] = field(default_factory=list)
    parallelism: int = 1

    def share(self, task: tuple) -> int:
        """The bytes of the input a task stands for (its part of its file), for progress."""
        fi, _, part, parts = task
        size = self.sizes[fi]
        return size // parts + (part < size % parts)


def head_of(name: str) -> bytes:
    """A file's first bytes, gzip undone (b"" when it cannot be read)."""
    try:
        with open_binary(name) as f:
            head = f.read(_HEAD)
            if head[:2] == b"\x1f\x8b":
                f.seek(0)
                with gzip.GzipFile(fileobj=f, mode="rb") as z:
                    head = z.read(_HEAD)
    except (OSError, EOFError, ValueError):
        return b""
    return head


def kind_of(name: str) -> str | None:
    """``capture``, ``snapshot`` (a family's snapshot file), or None, by content."""
    from ...families import families

    head = head_of(name)
    if looks_like_capture(head[:4]):
        return CAPTURE
    if any(f.snapshots is not None and f.snapshots.is_snapshot(head) for f in families()):
        return SNAPSHOT
    return None


def expand(paths: list[str]) -> list[str]:
    """Files from paths, globs, directories and URIs, in the order given: a directory (or a
    URI that lists files) gives the capture and snapshot files under it, recursively, in
    name order; a glob every file it matches; any other name itself (for the reader to
    report when it names nothing)."""
    out: list[str] = []
    for path in paths:
        if is_uri(path):
            try:
                found = expand_uri(path)
            except UriError as exc:
                raise CaptureError(f"cannot list {shown(path)}: {exc}") from None
            if found == [path] or any(c in urlsplit(path).path for c in "*?["):
                out.extend(found)
            else:
                out.extend(n for n in found if kind_of(n) is not None)
        elif os.path.isdir(path):
            for root, dirs, names in os.walk(path):
                dirs.sort()
                for name in sorted(names):
                    full = os.path.join(root, name)
                    if kind_of(full) is not None:
                        out.append(full)
        elif glob.has_magic(path):
            out.extend(sorted(p for p in glob.glob(path, recursive=True) if os.path.isfile(p)))
        else:
            out.append(path)
    return [p if is_uri(p) else os.path.abspath(p) for p in out]


def make_plan(paths: list[str], range_size: int = RANGE_SIZE, parallelism: int = 1, split: str = "auto",
              sc=None) -> Plan:
    """The plan of ``paths``. Raises ``CaptureError`` (or ``OSError``) for a file that cannot
    be read, or that is neither a capture nor a snapshot file. ``sc``: a SparkContext to
    walk the ranges of split files with (else they are walked here)."""
    if split not in SPLITS:
        raise ValueError(f"split: one of {', '.join(SPLITS)}")
    plan = Plan(parallelism=max(1, parallelism))
    split_files = []
    for fi, name in enumerate(expand(paths)):
        try:
            size = size_of(name)
        except OSError as exc:
            raise CaptureError(f"cannot read {shown(name)}: {exc.strerror or exc}") from None
        kind = kind_of(name)
        if kind is None:
            raise CaptureError(f"{shown(name)}: neither a capture (pcap, pcapng, gzip) nor a snapshot file (RDB)"
                               if size else f"{shown(name)}: empty file")
        plan.files.append(name)
        plan.kinds.append(kind)
        plan.sizes.append(size)
    # few files for the cores: cut them finer (a part of at least MIN_SHARE bytes), for
    # every core to have work; many files: the cores take whole files
    few = plan.kinds.count(CAPTURE) < 2 * plan.parallelism
    for fi, (kind, size) in enumerate(zip(plan.kinds, plan.sizes)):
        wanted = max(1, -(-size // max(1, range_size)))
        if kind == SNAPSHOT:
            plan.tasks.append((fi, kind, 0, 1))
        elif wanted > 1 and (split == "ranges" or (split == "auto" and min(wanted, plan.parallelism) > MAX_REREADS)):
            split_files.append(fi)
        else:
            if few and split != "ranges":
                wanted = max(wanted, -(-size // MIN_SHARE))
            parts = min(wanted, plan.parallelism) if split != "ranges" else 1
            plan.tasks.extend((fi, kind, part, parts) for part in range(parts))
    if split_files:
        try:
            ranges = plan_files([plan.files[fi] for fi in split_files], range_size, sc)
        except CaptureError as exc:
            text = str(exc)
            for name in plan.files:
                text = text.replace(name, shown(name))
            raise CaptureError(text) from None
        for fi in split_files:
            mine = [r for r in ranges if r.path == plan.files[fi]]
            if len(mine) > 1:
                plan.ranges.extend(mine)
            else:  # read whole after all (gzip, damage): one task, no shuffle
                plan.tasks.append((fi, CAPTURE, 0, 1))
    plan.tasks.sort(key=lambda t: -plan.share(t))  # the largest shares first: the cores end together
    return plan


def plan_files(files: list[str], range_size: int = RANGE_SIZE, sc=None) -> list[Range]:
    """The ranges of every file, in order. The pieces of split files are walked by a Spark
    job when ``sc`` (a SparkContext) is given, else here, one after another."""
    pieces = []
    for i, path in enumerate(files):
        layout, size, parts = candidate_ranges(path, range_size)
        if layout.kind == "whole":
            read_records(path)  # CaptureError now, on the driver, for a file that is no capture
        pieces.append((i, path, layout, size, parts))
    jobs = [(i, path, layout, s, e, size) for i, path, layout, size, parts in pieces if len(parts) > 1
            for s, e in parts]
    if jobs and sc is not None:
        walks = sc.parallelize(jobs, len(jobs)).map(lambda j: (j[0], walk_range(j[1], j[2], j[3], j[4], j[5]))) \
            .collect()
    else:
        walks = [(j[0], walk_range(j[1], j[2], j[3], j[4], j[5])) for j in jobs]
    by_file: dict[int, list] = {}
    for i, walk in walks:
        by_file.setdefault(i, []).append(walk)
    out: list[Range] = []
    for i, path, layout, size, parts in pieces:
        out.extend(plan_ranges(path, layout, size, sorted(by_file.get(i, []), key=lambda w: w.start)))
    return out



__all__ = ["Plan", "make_plan", "plan_files", "expand", "kind_of", "MAX_REREADS", "SPLITS"]
