"""Build frozen slots dataclasses fast on hot paths.

A frozen dataclass guards every attribute set in its ``__init__`` (about 1 µs per
record). :func:`builder` makes a plain class with the same slots whose ``__init__``
sets them directly; an instance of it given ``__class__ = cls`` is a genuine ``cls``.
"""

from __future__ import annotations


def builder(cls: type) -> type:
    """A plain class with ``cls``'s slots and an ``__init__`` taking them in order."""
    names = cls.__slots__
    source = f"def __init__(self, {', '.join(names)}):\n" + "".join(f"    self.{n} = {n}\n" for n in names)
    namespace: dict = {}
    exec(source, namespace)  # noqa: S102 - the source is built from the class's own slot names
    return type(f"_{cls.__name__}Builder", (), {"__slots__": names, "__init__": namespace["__init__"]})
