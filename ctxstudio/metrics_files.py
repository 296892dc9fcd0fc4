"""The multiprocess folder of the metrics (``PROMETHEUS_MULTIPROC_DIR``), as gunicorn's arbiter
prepares it before any worker starts and tidies it when one exits (``scripts/gunicorn.conf.py``).
No Django here: the arbiter does not load the application (``preload_app`` is off).
"""

import os
import stat
from pathlib import Path

MULTIPROCESS_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


class MetricsFolderRefused(OSError):
    """The multiprocess folder is not a directory private to this service's user."""


def multiprocess_folder_prepare(folder: str) -> Path:
    """Create the multiprocess folder (0700) if missing, refuse it unless it is a directory
    of this user's that nobody else may read or write, and empty it of the files of a
    previous run (their values would be merged into this run's). gunicorn's ``on_starting``."""
    path = Path(folder)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise MetricsFolderRefused(f"{path} is not a directory")
    if info.st_uid != os.geteuid():
        raise MetricsFolderRefused(f"{path} is owned by user {info.st_uid}, not this service's")
    if info.st_mode & 0o077:
        raise MetricsFolderRefused(
            f"{path} may be read or written by others (mode {stat.S_IMODE(info.st_mode):o}):"
            " use a folder only this service can use (0700)"
        )
    for stale in path.glob("*.db"):
        stale.unlink()
    return path


def worker_exited(pid: int) -> None:
    """A worker is gone: drop its live gauges' files (gunicorn's ``child_exit``)."""
    if os.environ.get(MULTIPROCESS_VARIABLE):
        from prometheus_client import multiprocess  # after the variable is read, as it must

        multiprocess.mark_process_dead(pid)
