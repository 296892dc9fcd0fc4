"""Where a gunicorn worker's time goes under load: py-spy samples of each worker, grouped by
the step of a resolve they fall in (issue 35: "a profile of a worker under load").

``WorkerProfile(pids, folder)`` starts ``py-spy record --format raw --nonblocking --gil`` on
each worker (sampling without pausing it, so the load is not slowed) and ``stop()`` ends
them; ``shares(files)`` reads the collapsed stacks and returns each step's share of the
samples. Only samples of a thread holding the GIL are kept (``--gil``): a thread waiting on a
socket (psycopg's reply, gunicorn's write and graceful close, the decision log's writer
waiting for rows) releases it, and py-spy's own idle detection does not see those waits. So
the shares are of the time a worker ran Python (or a C call that keeps the GIL): its CPU,
closely.

A sample counts towards the **deepest** step it is in (a resolve's engine stages inside the
lean door count as the engine's), with two exceptions marked terminal: the decision log's
writer thread and its row on the request path, which count as the decision log whatever
they call. What no step claims counts as the engine's other work (a frame of ``resolver/``),
Django (WSGI handler, kept middleware, response), or gunicorn.
"""

import os
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

# (step, file suffix, function or None for any, terminal), outermost steps first.
STEPS = (
    ("decision log (writer thread)", "profiles/resolution/decision_log.py", "_run", True),
    ("decision log (row on the request)", "profiles/resolution/decision_log.py", None, True),
    ("lean door: authentication (held keys)", "profiles/workspace/keys.py", None, False),
    ("lean door: throttle (shared cache)", "profiles/workspace/throttling.py", None, False),
    ("lean door: body parse", "profiles/api/lean.py", "_body", False),
    ("lean door: response render", "profiles/api/lean.py", "_finalized", False),
    ("metrics", "profiles/workspace/metrics.py", None, False),
    ("workspace cache (compiled copy, catch-up)", "profiles/workspace/cache.py", None, False),
    ("served read: rows to entries (Python)", "profiles/workspace/served.py", "_read", False),
    (
        "served read: the statement (psycopg, socket)",
        "profiles/workspace/served.py",
        "served_read",
        False,
    ),
    (
        "engine: fetched items' index (first meeting)",
        "resolver/compiled.py",
        "with_material",
        False,
    ),
    ("engine: stages (select, BM25, admit, render)", "resolver/engine.py", "run_stages", False),
    ("engine: report and JSON", "resolver/report.py", "encoded_resolution", False),
)
GENERIC = (
    ("engine: other", "resolver/"),
    ("Django (WSGI handler, kept middleware)", "django/"),
    ("gunicorn", "gunicorn/"),
)
OTHER = "other"


def _frame(frame: str) -> tuple[str, str]:
    """Return (function, file) of a py-spy raw frame ``function (file:line)``."""
    name, _, where = frame.rpartition(" (")
    return name, where.rsplit(":", 1)[0]


def step_of(stack: list[str]) -> str:
    """Return the step a sample's stack (outermost frame first) counts towards."""
    step = None
    for frame in stack:
        name, path = _frame(frame)
        for label, suffix, function, terminal in STEPS:
            if path.endswith(suffix) and (function is None or name.split(".")[-1] == function):
                step = label
                if terminal:
                    return step
                break
    if step is not None:
        return step
    for frame in reversed(stack):
        _, path = _frame(frame)
        for label, part in GENERIC:
            if part in path:
                return label
    return OTHER


# The innermost frames named for each step: the most sampled ones.
FRAMES_SHOWN = 3


def _short(frame: str) -> str:
    name, path = _frame(frame)
    return f"{name} ({'/'.join(path.split('/')[-2:])})"


def shares(files: list[Path]) -> tuple[int, dict[str, tuple[float, list[str]]]]:
    """Return the samples read and, by step (largest first), its share of them (%) and its
    most sampled innermost frames with their shares of all samples."""
    counts: Counter = Counter()
    frames: dict[str, Counter] = {}
    for file in files:
        if not file.exists():
            continue
        for line in file.read_text(errors="replace").splitlines():
            stack, _, count = line.rpartition(" ")
            if not stack or not count.isdigit():
                continue
            stack = stack.split(";")
            step = step_of(stack)
            counts[step] += int(count)
            frames.setdefault(step, Counter())[_short(stack[-1])] += int(count)
    total = sum(counts.values())
    if not total:
        return 0, {}
    return total, {
        step: (
            round(100 * n / total, 1),
            [
                f"{frame} {100 * m / total:.1f} %"
                for frame, m in frames[step].most_common(FRAMES_SHOWN)
            ],
        )
        for step, n in counts.most_common()
    }


def _py_spy() -> str:
    """py-spy beside this interpreter (the bench requirements install it there), else PATH's."""
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else (shutil.which("py-spy") or "py-spy")


class WorkerProfile:
    """py-spy recording each of some processes until ``stop()``."""

    def __init__(self, pids: list[int], folder: Path, rate: int = 250):
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.files = [folder / f"worker-{pid}.txt" for pid in pids]
        self.processes = [
            subprocess.Popen(
                [
                    _py_spy(),
                    "record",
                    "--pid",
                    str(pid),
                    "--format",
                    "raw",
                    "--nonblocking",
                    "--gil",
                    "--rate",
                    str(rate),
                    "--output",
                    str(file),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for pid, file in zip(pids, self.files, strict=True)
        ]

    def stop(self) -> tuple[int, dict[str, tuple[float, list[str]]]]:
        """End the recordings (py-spy writes its file on SIGINT); return ``shares``."""
        for process in self.processes:
            if process.poll() is None:
                os.kill(process.pid, signal.SIGINT)
        for process in self.processes:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
        return shares(self.files)
