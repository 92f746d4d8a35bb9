"""The replies a command may get, by their RESP type (Redis's command reference, "RESP2 /
RESP3 reply"): what tells whether a reply can answer a command, when a server direction
joined mid-way resynchronises on the replies that pair with the client's commands.

An error (``-``, ``!``), a RESP3 null (``_``) or boolean (``#``), an attribute (``|``) and
``+QUEUED`` (a command inside MULTI) may answer any command, and a command not listed may
get any reply. Types are grouped: a status (``+``), an integer (``:``), a string (``$``,
``=``, ``,``, ``(``: RESP3 answers a score as a double, INFO as verbatim text) and an
aggregate (``*``, ``%``, ``~``: RESP3 answers HGETALL with a map, SMEMBERS with a set);
a RESP2 null is a ``$`` or ``*`` of -1, of the command's own type.
"""

from __future__ import annotations

STATUS, INTEGER, STRING, AGGREGATE = "+", ":", "$", "*"
#: a RESP type byte → its group (those not here answer anything)
GROUPS = {ord("+"): STATUS, ord(":"): INTEGER, ord("$"): STRING, ord("="): STRING, ord(","): STRING,
          ord("("): STRING, ord("*"): AGGREGATE, ord("%"): AGGREGATE, ord("~"): AGGREGATE}


def _table(spec: dict[str, str]) -> dict[str, frozenset[str]]:
    return {name: frozenset(groups) for names, groups in spec.items() for name in names.split()}


#: command → the groups of its replies
REPLIES = _table({
    "SET": STATUS + STRING,
    "MSET SELECT MULTI WATCH UNWATCH DISCARD FLUSHALL FLUSHDB RENAME LTRIM LSET HMSET SETEX PSETEX RESTORE "
    "SWAPDB AUTH QUIT TYPE": STATUS,
    "PING": STATUS + STRING + AGGREGATE,  # PING msg: a string; subscribed: ["pong", msg]
    "INCR DECR INCRBY DECRBY DEL UNLINK EXISTS EXPIRE PEXPIRE EXPIREAT PEXPIREAT TTL PTTL PERSIST LPUSH RPUSH "
    "LPUSHX RPUSHX LLEN LINSERT LREM SADD SREM SCARD SISMEMBER SMOVE HSET HSETNX HDEL HLEN HEXISTS HSTRLEN ZCARD "
    "ZREM ZCOUNT ZLEXCOUNT PUBLISH SPUBLISH STRLEN APPEND SETRANGE SETNX MSETNX DBSIZE XLEN XDEL XACK PFADD "
    "PFCOUNT BITCOUNT GETBIT SETBIT TOUCH COPY MOVE RENAMENX SINTERCARD ZINTERCARD": INTEGER,
    "GET GETDEL GETEX GETSET GETRANGE SUBSTR HGET LINDEX ECHO DUMP INCRBYFLOAT HINCRBYFLOAT XADD RANDOMKEY "
    "INFO": STRING,
    "ZSCORE ZINCRBY": STRING,
    "ZRANK ZREVRANK": INTEGER + AGGREGATE,  # WITHSCORE: [rank, score]
    "LPOP RPOP SPOP SRANDMEMBER": STRING + AGGREGATE,  # with a count: an array
    "ZADD": INTEGER + STRING,  # INCR: the new score
    "MGET HMGET KEYS LRANGE SMEMBERS SINTER SUNION SDIFF HGETALL HKEYS HVALS ZRANGE ZREVRANGE ZRANGEBYSCORE "
    "ZREVRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX XRANGE XREVRANGE XREAD XREADGROUP SCAN SSCAN HSCAN ZSCAN EXEC "
    "TIME BLPOP BRPOP BLMPOP BZPOPMIN BZPOPMAX ZPOPMIN ZPOPMAX SMISMEMBER ZMSCORE GEOPOS": AGGREGATE,
})


def fits(name: str, type_byte: int, text: bytes = b"") -> bool:
    """Whether a reply of RESP type ``type_byte`` (``text``: its line, for a status) may
    answer the command ``name``."""
    group = GROUPS.get(type_byte)
    if group is None or (group == STATUS and text == b"QUEUED"):
        return True
    allowed = REPLIES.get(name)
    return allowed is None or group in allowed
