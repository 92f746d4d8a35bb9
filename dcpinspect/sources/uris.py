"""Files named by URI (``file://``, ``s3://`` / ``s3a://``, ``hdfs://``, ``gs://``, ...), read
through pyarrow's file systems: what a cluster's file system serves, for ``analyze``.

A name without a scheme is a local path and never reaches here. ``s3a://`` and ``s3n://``
(Hadoop's names) are read as ``s3://``; S3's endpoint, region and credentials come from the
usual AWS settings (``AWS_ENDPOINT_URL``, ``AWS_REGION``, ``AWS_ACCESS_KEY_ID``, ...) or
from the URI (``s3://KEY:SECRET@bucket/path?endpoint_override=host:port&scheme=http``). ``hdfs://`` needs
Hadoop's ``libhdfs`` and ``CLASSPATH`` as pyarrow describes. pyarrow is imported when a URI
is first met.
"""

from __future__ import annotations

import fnmatch
import re
from functools import lru_cache
from urllib.parse import urlsplit, urlunsplit

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
#: Hadoop's names for S3, read as pyarrow's
ALIASES = {"s3a": "s3", "s3n": "s3"}
_CHUNK = 1 << 20


class UriError(OSError):
    """A URI that cannot be listed or read: its message says why (the caller names the URI,
    as :func:`shown` shows it: never with the credentials it may carry)."""


def is_uri(name: str) -> bool:
    """Whether ``name`` is a URI (``scheme://...``), not a local path."""
    return isinstance(name, str) and bool(_SCHEME.match(name))


def _split(uri: str) -> tuple[str, str, str]:
    """(scheme as pyarrow reads it, the URI pyarrow is given, the query)."""
    parts = urlsplit(uri)
    scheme = ALIASES.get(parts.scheme.lower(), parts.scheme.lower())
    return scheme, urlunsplit((scheme, parts.netloc, parts.path, parts.query, "")), parts.query


@lru_cache(maxsize=64)
def _filesystem(root: str):
    from pyarrow import fs

    return fs.FileSystem.from_uri(root)


def locate(uri: str):
    """``(filesystem, path in it)`` of a URI."""
    scheme, plain, query = _split(uri)
    parts = urlsplit(plain)
    root = urlunsplit((scheme, parts.netloc, "/" if scheme == "file" else "", query, ""))
    try:
        fs, _ = _filesystem(root)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several kinds for a URI it cannot serve
        raise UriError(str(exc)) from None
    path = parts.path if scheme == "file" else parts.netloc.rpartition("@")[2] + parts.path
    return fs, path


def _rebuild(uri: str, path: str) -> str:
    """The URI of ``path`` on the file system of ``uri`` (its scheme and query kept)."""
    parts = urlsplit(uri)
    if parts.scheme.lower() == "file":
        return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
    bucket, _, rest = path.partition("/")
    user = parts.netloc.rpartition("@")[0]
    return urlunsplit((parts.scheme, f"{user}@{bucket}" if user else bucket, "/" + rest if rest else "", parts.query,
                       ""))


def file_size(uri: str) -> int:
    fs, path = locate(uri)
    try:
        info = fs.get_file_info(path)
    except Exception as exc:  # noqa: BLE001
        raise UriError(str(exc)) from None
    if info.size is None:
        raise UriError("no such file")
    return info.size


def expand(uri: str) -> list[str]:
    """The files a URI names: itself, every file under it when it is a directory (or an S3
    prefix), or those its glob pattern (``*``, ``?``, ``[...]`` in its path) matches; in
    name order. A URI that names nothing gives itself, for the reader to report."""
    from pyarrow import fs as pafs

    filesystem, path = locate(uri)
    pattern = None
    if any(c in path for c in "*?["):
        pattern, path = path, re.split(r"[*?\[]", path, maxsplit=1)[0].rsplit("/", 1)[0]
    try:
        info = filesystem.get_file_info(path)
        if info.type == pafs.FileType.File and pattern is None:
            return [uri]
        if info.type == pafs.FileType.NotFound and pattern is None:
            return [uri]
        found = filesystem.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
    except Exception as exc:  # noqa: BLE001
        raise UriError(str(exc)) from None
    names = sorted(f.path for f in found if f.type == pafs.FileType.File)
    if pattern is not None:
        names = [n for n in names if fnmatch.fnmatchcase(n, pattern)]
    return [_rebuild(uri, n) for n in names]


class UriFile:
    """A file named by URI, open for reading: ``read``, ``seek``, ``tell``, ``close`` as a
    binary file has them (random access, for ranges), and ``name``, the URI."""

    def __init__(self, uri: str) -> None:
        self.name = uri
        filesystem, path = locate(uri)
        try:
            self._f = filesystem.open_input_file(path)
        except Exception as exc:  # noqa: BLE001
            raise UriError(str(exc)) from None

    def read(self, n: int = -1) -> bytes:
        try:
            return self._f.read() if n is None or n < 0 else self._f.read(n)
        except Exception as exc:  # noqa: BLE001
            raise UriError(str(exc)) from None

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._f.seek(offset, whence)

    def tell(self) -> int:
        return self._f.tell()

    def seekable(self) -> bool:
        return True

    def size(self) -> int:
        return self._f.size()

    def close(self) -> None:
        self._f.close()

    @property
    def closed(self) -> bool:
        return self._f.closed

    def __enter__(self) -> "UriFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def shown(name: str) -> str:
    """A name as outputs show it: a URI without the credentials it may carry."""
    if not is_uri(name):
        return name
    parts = urlsplit(name)
    if "@" not in parts.netloc:
        return name
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, parts.query, parts.fragment))


def open_binary(name: str):
    """A local path or a URI, open for reading bytes."""
    return UriFile(name) if is_uri(name) else open(name, "rb")


def size_of(name: str) -> int:
    """The size in bytes of a local path or a URI's file."""
    import os

    return file_size(name) if is_uri(name) else os.path.getsize(name)
