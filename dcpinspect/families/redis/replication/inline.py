"""An inline command's words, split as Redis splits them (``sdssplitargs`` in its
``sds.c``, called on the line without its ``\\n`` and the ``\\r`` before it).

Words are separated by blanks (C's ``isspace``); a word may hold double-quoted parts, in
which ``\\xHH`` (two hex digits) is that byte, ``\\n``, ``\\r``, ``\\t``, ``\\b`` and ``\\a``
the control characters and a backslash before any other character that character, and
single-quoted parts, in which only ``\\'`` is an escape. A closing quote must be followed
by a blank or the line's end; an unterminated quote, or a closing one followed by
something else, makes the whole line unusable: the server answers "-ERR Protocol error:
unbalanced quotes in request" and closes the connection. A NUL byte ends the line, as it
ends the C string that Redis splits.
"""

from __future__ import annotations

#: C's isspace: what is skipped between words
BLANKS = frozenset(b" \t\n\v\f\r")
#: what ends an unquoted part of a word (sdssplitargs' own list: not \v or \f)
ENDS = frozenset(b" \n\r\t")
HEX = frozenset(b"0123456789abcdefABCDEF")
ESCAPES = {ord("n"): 10, ord("r"): 13, ord("t"): 9, ord("b"): 8, ord("a"): 7}
DQ, SQ, BACKSLASH = 34, 39, 92


def split_args(line: bytes) -> list[bytes] | None:
    """The words of ``line`` (its newline already removed); None for unbalanced quotes."""
    nul = line.find(b"\0")
    if nul >= 0:
        line = line[:nul]
    if DQ not in line and SQ not in line and b"\v" not in line and b"\f" not in line:
        return line.split()  # the common case: plain words
    n = len(line)
    p = 0
    words: list[bytes] = []
    while True:
        while p < n and line[p] in BLANKS:
            p += 1
        if p >= n:
            return words
        word = bytearray()
        quote = 0
        while True:
            c = line[p] if p < n else 0
            if quote:
                if quote == DQ and c == BACKSLASH and p + 3 < n and line[p + 1] == ord("x") \
                        and line[p + 2] in HEX and line[p + 3] in HEX:
                    word.append(int(line[p + 2:p + 4], 16))
                    p += 3
                elif c == BACKSLASH and p + 1 < n and (quote == DQ or line[p + 1] == SQ):
                    p += 1  # any escape in double quotes; only \' in single ones
                    word.append(ESCAPES.get(line[p], line[p]))
                elif c == quote:  # a closing quote ends the word: a blank or the end must follow
                    if p + 1 < n and line[p + 1] not in BLANKS:
                        return None
                    break
                elif p >= n:  # unterminated
                    return None
                else:
                    word.append(c)
            elif p >= n or c in ENDS:
                break
            elif c == DQ or c == SQ:
                quote = c
            else:
                word.append(c)
            p += 1
        p += 1
        words.append(bytes(word))
