"""Which connections of a capture are decoded, as every command that reads captures takes
it (``--port``, ``--decode-as PORT=FAMILY``, ``--no-heuristic``): one value that reaches the
capture decoder the same way from ``decode``, ``validate``, ``stats``, ``live`` and
``analyze``."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..families import default_family, family_named, stream_families


class OptionError(ValueError):
    """An option that names no port or no family: its message is the line the user sees."""


@dataclass(frozen=True)
class CaptureOptions:
    """Server ports decoded besides each family's own (port → family name), and whether a
    connection on a port no family claims may be taken on the evidence of its first bytes."""

    ports: dict[int, str] = field(default_factory=dict)
    heuristic: bool = True

    def decoder(self) -> dict:
        """The keyword arguments of the capture decoder (``CaptureDecoder``) they make."""
        return dict(ports=dict(self.ports), heuristic=self.heuristic)


def capture_options(ports: list[int] = (), decode_as: list[str] = (), no_heuristic: bool = False) -> CaptureOptions:
    """The options as given: ``--port`` (for the default family), ``--decode-as PORT=FAMILY``
    (later ones win a port), ``--no-heuristic``. Raises :class:`OptionError`."""
    first = default_family().name
    out = dict.fromkeys(ports, first)
    for spec in decode_as:
        port, _, name = spec.partition("=")
        family = family_named(name)
        if family is None or family.framer is None:
            known = ", ".join(f.name for f in stream_families())
            raise OptionError(f"--decode-as {spec!r}: {name!r} is no protocol family (they are {known})")
        try:
            number = int(port)
        except ValueError:
            raise OptionError(f"--decode-as {spec!r}: {port!r} is not a port number") from None
        if not 0 < number < 65536:
            raise OptionError(f"--decode-as {spec!r}: {number} is not a TCP port (1-65535)")
        out[number] = family.name
    return CaptureOptions(out, not no_heuristic)
