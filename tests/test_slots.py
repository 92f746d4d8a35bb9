"""The plain data classes (``dcpinspect/slots.py``): every field is an ``__init__`` parameter
and every parameter a field, so that equality, the text shown, ``replace`` and pickling
cover each one; and the start-up of ``dcpinspect rdb`` imports none of the modules they
replace."""

import inspect
import pickle
import pkgutil
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

import dcpinspect
from dcpinspect.findings import Finding
from dcpinspect.families.redis.rdb.records import Ending, KeyRecord
from dcpinspect.slots import Slots, names

ROOT = Path(__file__).resolve().parent.parent


def _every_slots_class() -> list[type]:
    for info in pkgutil.walk_packages(dcpinspect.__path__, "dcpinspect."):
        if ".spark" in info.name or info.name.endswith(("__main__", ".cli")):
            continue  # (pyspark, and the typer app: not what these classes are)
        try:
            import_module(info.name)
        except ImportError:
            continue
    found, todo = [], list(Slots.__subclasses__())
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


CLASSES = _every_slots_class()


def test_the_classes_are_found():
    assert {"Finding", "KeyRecord", "Family", "Option", "Limit", "RawFrame", "RespFrame", "Shown"} - \
        {c.__name__ for c in CLASSES} == {"Family"}  # (Family is equal only to itself: no Slots)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_every_field_is_a_parameter_and_every_parameter_a_field(cls):
    params = [p.name for p in inspect.signature(cls.__init__).parameters.values()][1:]
    assert params == list(names(cls))
    assert all("__slots__" in c.__dict__ for c in cls.__mro__ if c is not object)  # (no __dict__: no stray field)


def test_equal_shown_replaced_hashed_and_pickled_as_a_dataclass_was():
    f = Finding("rdb-corrupt", "EINVAL", "error", "bad", 12, "spec", frame=3)
    same = Finding("rdb-corrupt", "EINVAL", "error", "bad", 12, "spec", frame=3)
    assert f == same and hash(f) == hash(same) and len({f, same}) == 1
    assert f != f.replace(frame=4) and f.replace(frame=4).frame == 4 and f.frame == 3
    assert repr(f) == ("Finding(rule='rdb-corrupt', cls='EINVAL', severity='error', message='bad', offset=12, "
                       "ref='spec', vbucket=None, stream_id=None, frame=3)")
    assert pickle.loads(pickle.dumps(f)) == f
    with pytest.raises(TypeError):
        f.replace(nope=1)
    rec = KeyRecord(0, b"k", 0, None, 7)
    assert rec.extra == {} and rec.findings == [] and rec.extra is not KeyRecord(0, b"k", 0, None, 7).extra
    with pytest.raises(TypeError):
        hash(rec)  # (its fields change as it is read: unhashable, as its dataclass was)
    assert rec != KeyRecord(1, b"k", 0, None, 7) and rec == pickle.loads(pickle.dumps(rec))
    assert Ending("redis", 11) != Finding("a", "b", "c", "d")
    end = Ending("redis", 11, bytes_read=5).replace(trailing=2)
    assert (end.bytes_read, end.trailing, end.findings) == (5, 2, [])


def test_the_rdb_start_up_imports_no_dataclasses_inspect_typing_or_pathlib():
    """What made a third of a small file's run: imported by none of rdb's outputs (beyond
    what the interpreter's own start-up imports here: a .pth file may import some)."""
    unwanted = "{'dataclasses', 'inspect', 'typing', 'pathlib', 'typer', 'click', 'rich'}"
    start = ("import sys\nbefore = set(sys.modules)\n")
    code = (f"{start}from dcpinspect.__main__ import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
            f"sys.stderr.write(repr(sorted((set(sys.modules) - before) & {unwanted})))")
    sample = str(ROOT / "samples" / "redis-dump.rdb")
    for args in ([], ["-f", "jsonl"], ["-f", "summary"], ["-f", "jsonl", "--values"], ["-f", "resp"]):
        got = subprocess.run([sys.executable, "-c", code, "rdb", sample, *args], capture_output=True, cwd=ROOT,
                             timeout=120)
        assert got.stdout and got.stderr.endswith(b"[]"), (args, got.stderr[-300:])
