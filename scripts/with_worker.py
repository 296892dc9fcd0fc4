"""Run a server with a task worker beside it; the worker stops when the server does.

    python scripts/with_worker.py -- manage.py runserver 127.0.0.1:8000

Starts ``manage.py db_worker`` (django-tasks-db: runs the background imports), then the
command, and waits for the command. Ctrl-C or SIGTERM reaches the command; when it ends, for
whatever reason, the worker is stopped too, so ``make run`` and ``make serve`` leave nothing
running behind them.
"""

import signal
import subprocess
import sys


def main(argv: list[str]) -> int:
    command = argv[1:] if argv[:1] == ["--"] else argv
    if not command:
        print("usage: with_worker.py -- COMMAND...", file=sys.stderr)
        return 2
    # The checks ran with the migrations just before: their warnings are said once.
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "db_worker", "-v", "0", "--skip-checks"]
    )
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
        worker.terminate()
        try:
            worker.wait(timeout=15)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
