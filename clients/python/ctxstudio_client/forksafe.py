"""Fork safety: what a process holds that a child of ``fork`` must not share.

A thread does not survive ``fork`` (gunicorn, uWSGI and Celery prefork fork after the
application imported and maybe used the client), a lock another thread held at the fork is
never released in the child, and a pooled connection's socket would be shared by parent and
child. Every object holding such things registers here; in the child, ``after_fork`` drops
them (threads, pools) and makes new locks, and the next call starts them again, lazily.
``os.register_at_fork`` runs the handlers; objects also compare ``os.getpid()`` with the
process that started their threads, for a fork that skipped the handlers (``os.fork`` from
C, e.g. some process managers).
"""

import os
import threading
import weakref

_objects: "weakref.WeakSet" = weakref.WeakSet()
_registered = False
_lock = threading.Lock()


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()
    for obj in list(_objects):
        obj.after_fork()


def register(obj) -> None:
    """Call ``obj.after_fork()`` in the child of every later fork (held weakly)."""
    global _registered
    with _lock:
        if not _registered and hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_after_fork_in_child)
            _registered = True
        _objects.add(obj)
