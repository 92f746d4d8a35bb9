"""The base of the plain data classes that every command imports as it starts: the findings,
the records of a snapshot, the families' descriptions, the limits and the options.

Each such class names its fields in ``__slots__`` and sets them in its own ``__init__``;
:class:`Slots` gives it what a dataclass would: two objects of one class are equal when
their fields are, one shows as ``Name(field=value, ...)``, :meth:`Slots.replace` copies one
with some fields changed, and a class whose objects are never changed once made hashes
them by their fields (``__hash__ = Slots.hashed``). The ``dataclasses`` module, with the
``inspect`` it imports, cost a third of the start-up of ``dcpinspect rdb`` on a small file.
"""

from __future__ import annotations


def names(cls: type) -> tuple[str, ...]:
    """The fields of a :class:`Slots` class: the ``__slots__`` of its bases', then its own."""
    got = _NAMES.get(cls)
    if got is None:
        got = _NAMES[cls] = tuple(name for c in reversed(cls.__mro__) for name in c.__dict__.get("__slots__", ()))
    return got


_NAMES: dict[type, tuple[str, ...]] = {}


class Slots:
    __slots__ = ()

    def _values(self) -> tuple:
        """The fields' values, in the order of :func:`names`."""
        return tuple([getattr(self, name) for name in names(type(self))])

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    #: (unhashable, as a dataclass whose fields may change)
    __hash__ = None  # type: ignore[assignment]

    def hashed(self) -> int:
        """The hash of the fields: ``__hash__`` of a class whose objects never change."""
        return hash(self._values())

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in names(type(self)))})"

    def replace(self, **changes):
        """A copy with the fields of ``changes`` changed (TypeError for a name that is none)."""
        new = object.__new__(type(self))
        for name in names(type(self)):
            setattr(new, name, changes.pop(name) if name in changes else getattr(self, name))
        if changes:
            raise TypeError(f"{type(self).__qualname__} has no field {', '.join(sorted(changes))}")
        return new
