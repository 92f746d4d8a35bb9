"""Pure, sans-I/O codecs for the pieces of MCBP/DCP payloads.

Modules: ``leb128`` (collection-id key prefix), ``frameinfo`` (flexible framing
extras), ``xattr`` (extended-attribute blob), ``snappy`` (raw block format),
``sysevent`` (DCP system-event values) and ``xerror`` (error-context JSON).
Each decoder raises only :class:`CodecError` on malformed input.
"""

from .errors import CodecError

__all__ = ["CodecError"]
