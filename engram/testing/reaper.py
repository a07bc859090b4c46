"""Throwaway servers stopped when the process that started them is killed.

A test session stops its PostgreSQL and Citus servers at exit (``atexit``); killed (a CI job's
timeout, SIGKILL, a terminal closed), it never runs that, and ``pg_ctl`` has detached the servers:
they ran on, holding ports and shared memory, until someone stopped them by hand. A watchdog in a
session of its own waits for the starting process to end and then stops them (immediate shutdown:
their data is thrown away) and removes their directory; after a clean stop it finds nothing to do.
"""

from __future__ import annotations

import os
import pwd
import shlex
import subprocess
from collections.abc import Sequence
from pathlib import Path

__all__ = ["stop_when_gone"]

_WATCHING: list[subprocess.Popen[bytes]] = []  # held: a watchdog outlives this process by design


def stop_when_gone(pg_ctl: Path, data_dirs: Sequence[Path], root: Path, run_as: pwd.struct_passwd | None) -> bool:
    """Start the watchdog of the servers in ``data_dirs`` (their directory ``root``) for this process;
    False where there is no ``/proc`` to watch it by (a process run as another account cannot signal
    this one, so it looks for it there)."""
    me = os.getpid()
    if not Path(f"/proc/{me}").is_dir():
        return False
    stops = "; ".join(f"{shlex.quote(str(pg_ctl))} -D {shlex.quote(str(d))} -m immediate -w stop >/dev/null 2>&1"
                      for d in data_dirs)
    script = (f"while [ -d /proc/{me} ]; do sleep 1; done; "
              f"if [ -d {shlex.quote(str(root))} ]; then {stops}; rm -rf {shlex.quote(str(root))}; fi")
    command = ["/bin/sh", "-c", script]
    quiet = subprocess.DEVNULL
    if run_as is None:
        _WATCHING.append(subprocess.Popen(command, stdin=quiet, stdout=quiet, stderr=quiet, start_new_session=True))
    else:
        _WATCHING.append(subprocess.Popen(command, stdin=quiet, stdout=quiet, stderr=quiet, start_new_session=True,
                                          user=run_as.pw_uid, group=run_as.pw_gid, extra_groups=[]))
    return True
