"""A newer redis-server than the machine's Debian has, for the tests that need one.

    python3 scripts/newer_redis.py [redis|valkey] [DIR]

Debian 12 packages Redis 7.0, which cannot judge the files of 7.2 and later (listpack sets,
hashes whose fields expire, RDB 11 and 12). Debian 13 ("trixie") packages a newer Redis;
and Valkey 8.1 (which Debian 12 has not at all); this script takes the ``redis-tools``
(or ``valkey-tools``) package and the shared libraries it needs (its C library included)
from Debian's archive, unpacks them into ``DIR`` (default
``~/.cache/dcpinspect/<product>-trixie``) without installing anything, and points the
program at its own loader and libraries (``patchelf``), so that it runs beside the older
system. The program is both ``<product>-server`` and ``<product>-check-rdb``, by the name
it is called by.

It prints the path of the server (what ``DCPINSPECT_REDIS_72`` and ``DCPINSPECT_VALKEY``
take: see tests/servers.py) and exits 0, or says what failed on stderr and exits 1. A second run
finds the unpacked copy and downloads nothing. Every package is checked against the
SHA-256 the archive's index gives.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

#: Debian's archive and the release whose Redis is taken
MIRROR = os.environ.get("DCPINSPECT_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SUITE = "trixie"
#: per product: the package wanted (its dependencies are followed only into libraries,
#: lib*) and its one program, as the package installs it
PRODUCTS = {"redis": ("redis-tools", "usr/bin/redis-check-rdb"),
            "valkey": ("valkey-tools", "usr/bin/valkey-check-rdb")}
TIMEOUT = 120


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=TIMEOUT) as r:
        return r.read()


def index(arch: str) -> dict[str, dict[str, str]]:
    """The suite's packages by name: each stanza's fields."""
    text = lzma.decompress(fetch(f"{MIRROR}/dists/{SUITE}/main/binary-{arch}/Packages.xz")).decode()
    out = {}
    for stanza in text.split("\n\n"):
        fields, last = {}, None
        for line in stanza.splitlines():
            if line[:1] in (" ", "\t") and last:
                fields[last] += "\n" + line
            elif ":" in line:
                last, _, value = line.partition(":")
                fields[last] = value.strip()
        if "Package" in fields:
            out[fields["Package"]] = fields
    return out


def closure(packages: dict[str, dict[str, str]], root: str) -> list[str]:
    """``root`` and every library it depends on, directly or not (an alternative's first
    name that the index holds)."""
    seen, todo = [], [root]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.append(name)
        deps = ", ".join(packages[name].get(f, "") for f in ("Pre-Depends", "Depends"))
        for dep in filter(None, (d.strip() for d in deps.split(","))):
            choice = next((a.split()[0].split(":")[0] for a in dep.split("|") if a.split()[0] in packages), None)
            if choice and choice.startswith("lib") and choice not in seen:
                todo.append(choice)
    return seen


def unpack(dest: Path, product: str) -> Path:
    package, installed = PRODUCTS[product]
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, check=True).stdout.strip()
    packages = index(arch)
    root = dest / "root"
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in closure(packages, package):
            p = packages[name]
            body = fetch(f"{MIRROR}/{p['Filename']}")
            if hashlib.sha256(body).hexdigest() != p["SHA256"]:
                raise RuntimeError(f"{name}: the package's SHA-256 is not the index's")
            deb = Path(tmp) / f"{name}.deb"
            deb.write_bytes(body)
            subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    loader = next(p for p in (root / "usr/lib64/ld-linux-x86-64.so.2", root / "lib64/ld-linux-x86-64.so.2",
                              *root.glob("usr/lib/*/ld-linux*.so*")) if p.exists())
    libs = ":".join(str(d) for d in sorted(root.glob("usr/lib/*-linux-gnu*")) if d.is_dir())
    bin_dir = dest / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    program = bin_dir / f"{product}-server"
    shutil.copy2(root / installed, program)
    subprocess.run(["patchelf", "--set-interpreter", str(loader.resolve()), "--force-rpath", "--set-rpath", libs,
                    str(program)], check=True)
    check = bin_dir / f"{product}-check-rdb"
    if not check.exists():
        check.symlink_to(program.name)
    return program


def works(program: Path) -> str | None:
    try:
        out = subprocess.run([str(program), "--version"], capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    return out.stdout.strip() if out.returncode == 0 and "v=" in out.stdout else None


def main() -> int:
    args = sys.argv[1:]
    product = args.pop(0) if args and args[0] in PRODUCTS else "redis"
    dest = Path(args[0] if args else Path.home() / f".cache/dcpinspect/{product}-trixie")
    program = dest / "bin" / f"{product}-server"
    if not works(program):
        shutil.rmtree(dest, ignore_errors=True)
        try:
            program = unpack(dest, product)
        except Exception as e:  # noqa: BLE001 (what failed is said, and the caller goes on without it)
            print(f"newer_redis: {type(e).__name__}: {e}", file=sys.stderr)
            return 1
        if not works(program):
            print(f"newer_redis: {program} does not run", file=sys.stderr)
            return 1
    print(program)
    return 0


if __name__ == "__main__":
    sys.exit(main())
