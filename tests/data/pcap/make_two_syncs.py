"""Writes tests/data/pcap/redis-two-syncs.pcap, the README's example of reports on a
capture of several full syncs: a real redis-server master (20 strings ``k:0`` ... ``k:19``
and a list ``l``), two replicas synced one after the other, ``k:3`` set to ``changed``
between them, captured with tcpdump on loopback (needs root)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import servers  # noqa: E402
import test_real_redis_rdb as real  # noqa: E402
import test_real_redis_replication as repl  # noqa: E402


if __name__ == "__main__":
    out = Path(__file__).with_name("redis-two-syncs.pcap")
    servers.require("redis-server", "tcpdump", root=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        with repl.Redis(tmp_path, "--repl-diskless-sync", "no") as master:
            mc = real.Client(master.port)
            mc.pipeline([("SET", f"k:{i}", f"v{i}") for i in range(20)] + [("RPUSH", "l", "a", "b")])
            capture = servers.TcpDump(tmp_path / "syncs.pcap", master.port).start()
            try:
                for change in (None, ("SET", "k:3", "changed")):
                    if change:
                        mc.call(*change)
                    with repl.Redis(tmp_path, "--replicaof", servers.LOOPBACK, str(master.port)) as replica:
                        rc = repl.Client(replica.port)
                        assert servers.wait_until(lambda: rc.info("master_link_status") == "up", 30)
                        rc.close()
            finally:
                capture.stop()
            mc.close()
        shutil.copy(tmp_path / "syncs.pcap", out)
    print(f"wrote {out}")
