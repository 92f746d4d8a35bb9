"""Other protocols' openings: the first bytes of a direction of a connection that say it
is none of ours, whatever a family's sniffer would make of them.

TLS (a record of any version, or the SSLv2-compatible ClientHello whose first byte has
the top bit set, as MCBP's request magic 0x80 has), HTTP/1 and HTTP/2, SSH, and the
greetings and commands that open mail, news and file-transfer sessions (SMTP, POP3,
IMAP, NNTP, FTP), with the STARTTLS family that turns them into TLS. The families'
sniffers ask :func:`foreign` first, at the start of each direction they see from its
beginning.
"""

from __future__ import annotations

import re

#: a TLS record: content type (change_cipher_spec 20 .. heartbeat 24), version 3.x, a
#: length up to 2^14 + 2048
_TLS = re.compile(rb"[\x14-\x18]\x03[\x00-\x04][\x00-\x48]", re.S)
#: an SSLv2-compatible ClientHello: a two-byte record header with the top bit set, message
#: type 1 (CLIENT-HELLO), version 2.0 or 3.0-3.3
_SSL2 = re.compile(rb"[\x80-\xff].\x01(?:\x00\x02|\x03[\x00-\x03])", re.S)
_HTTP = re.compile(rb"(?:GET|POST|PUT|HEAD|DELETE|OPTIONS|PATCH|CONNECT|TRACE|PROPFIND|PRI) [\x21-\x7e]+ HTTP/"
                   rb"|HTTP/[0-9]")
#: greetings a server sends first (SMTP, FTP, NNTP: a three-digit code; POP3: +OK or -ERR;
#: IMAP: an untagged OK, PREAUTH or BYE), and SSH's identification string
_GREETING = re.compile(rb"[1-5][0-9][0-9][ -]|\+OK|-ERR|\* (?:OK|PREAUTH|BYE)|SSH-[0-9]")
#: what a mail, news or file-transfer client opens with or turns to TLS with
_CLIENT = re.compile(rb"(?:EHLO|HELO|LHLO|STARTTLS|STLS|CAPA|USER|APOP|AUTH [A-Z]|AUTHINFO|AUTH\r?\n"
                     rb"|[A-Za-z0-9.]{1,16} (?:CAPABILITY|LOGIN|AUTHENTICATE|STARTTLS))", re.I)
#: bytes enough to tell any of them
DECIDE = 32


def foreign(head: bytes, first: bool = True) -> str | None:
    """The other protocol the first bytes of a direction open, if they open one:
    ``tls``, ``ssl2``, ``http``, ``greeting`` (a server that speaks first with a
    mail, news or FTP greeting, or SSH: only when ``first``, the direction spoke before
    the other, as a greeting does; a Redis server's ``+OK`` answers) or ``mail`` (such a
    client's command)."""
    if _TLS.match(head):
        return "tls"
    if _SSL2.match(head):
        return "ssl2"
    if _HTTP.match(head):
        return "http"
    if first and _GREETING.match(head):
        return "greeting"
    if _CLIENT.match(head):
        return "mail"
    return None
