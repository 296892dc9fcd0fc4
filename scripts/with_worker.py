"""Run a server with its task workers beside it; the workers stop when the server does.

    python scripts/with_worker.py -- manage.py runserver 127.0.0.1:8000

Starts one ``manage.py db_worker`` (django-tasks-db) per task queue — ``default`` (imports,
bulk ingest jobs, scheduled applies) and ``webhooks`` (webhook deliveries, so that a receiver
that never answers delays no other job) — then the command, and waits for the command.
Ctrl-C or SIGTERM reaches the command; when it ends, for whatever reason, the workers are
stopped too, so ``make run`` and ``make serve`` leave nothing running behind them.
"""

import signal
import subprocess
import sys

#: One worker per queue (settings.TASK_QUEUES).
QUEUES = ("default", "webhooks")


def main(argv: list[str]) -> int:
    command = argv[1:] if argv[:1] == ["--"] else argv
    if not command:
        print("usage: with_worker.py -- COMMAND...", file=sys.stderr)
        return 2
    # The checks ran with the migrations just before: their warnings are said once.
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "db_worker",
                "--queue-name",
                queue,
                "-v",
                "0",
                "--skip-checks",
            ]
        )
        for queue in QUEUES
    ]
    server = subprocess.Popen(command)

    def forward(signum, frame):
        # A terminal's Ctrl-C reaches the whole process group; a kill reaches only us.
        if server.poll() is None:
            server.send_signal(signum)

    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGTERM, forward)
    try:
        return server.wait()
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            try:
                worker.wait(timeout=15)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
