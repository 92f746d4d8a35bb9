"""Capture times as text, for the terminal views.

A capture's timestamps come from the file: a damaged or crafted pcapng (an odd
``if_tsresol`` or ``if_tsoffset``, a flipped high byte) can put them thousands of
years outside what a calendar date can show. :func:`stamp` prints every one: a UTC
date when the time can be one, the raw number of seconds otherwise.
"""

from __future__ import annotations

import datetime as _dt
import math

__all__ = ["stamp", "DATE_FORMAT"]

#: How a capture time that is a date prints (UTC, microseconds); the year always has
#: four digits (glibc's ``%Y`` does not pad years before 1000).
DATE_FORMAT = "%Y-%m-%d %H:%M:%S.%f"
_AFTER_YEAR = DATE_FORMAT[3:]  # "-%m-%d ..."

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def stamp(ts: float) -> str:
    """``ts`` (seconds since 1970, UTC) as ``YYYY-MM-DD HH:MM:SS.ffffff``, or as
    ``ts=1.8e+19 (not a date)`` when no date between the years 1 and 9999 is that time.
    Never raises, whatever ``ts`` is."""
    try:
        if not math.isfinite(ts):
            return f"ts={ts} (not a date)"
        try:
            when = _dt.datetime.fromtimestamp(ts, _dt.timezone.utc)
        except (OverflowError, OSError, ValueError):  # some C libraries refuse times before 1970
            when = _EPOCH + _dt.timedelta(seconds=ts)
        return f"{when.year:04d}-" + when.strftime(_AFTER_YEAR)
    except (OverflowError, OSError, ValueError, TypeError):
        return _raw(ts)


def _raw(ts) -> str:
    try:
        return f"ts={float(ts):.6g} (not a date)"
    except (OverflowError, TypeError, ValueError):
        return f"ts={str(ts)[:24]} (not a date)"
