"""How the record filters of ``decode`` and ``live`` match Redis records: ``--command
NAME`` keeps the RESP frames of that name, whatever its case (a command by its first word,
``SET``, ``REPLCONF``; a reply by its first word, ``+FULLRESYNC``, ``-ERR``), the replies
that answer the commands of that name (``GET`` and its bulk, as one asks of a capture) and, by the
name ``RDB payload``, the pieces of a replication's RDB payload with their keys; a
Dragonfly journal record by ``journal`` and its command (``journal SET``) or op
(``journal LSN``)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable


#: the criteria Redis records are matched by
CRITERIA = frozenset({"command"})


class Filters:
    """The Redis family's :class:`~dcpinspect.families.RecordFilters`."""

    criteria = CRITERIA

    @staticmethod
    def owns(record: Any) -> bool:
        from .frames import JournalRecord, PayloadRecord, RespRecord

        return isinstance(record, (RespRecord, PayloadRecord, JournalRecord))

    @staticmethod
    def matcher(given: dict[str, tuple]) -> Callable[[Any], bool]:
        names = frozenset(str(n).strip().upper() for n in given.get("command", ()))
        if "" in names:
            raise ValueError("--command needs a name (SET, REPLCONF, +FULLRESYNC, ...)")

        def test(record) -> bool:
            if not names or record.name.upper() in names:
                return True
            answers = getattr(record, "answers", None)  # a reply: the name of the command it answers
            return answers is not None and answers.upper() in names

        return test


FILTERS = Filters()
