"""Container check: build the image and run compose.yaml, then use what it serves.

``python -m tests.perf.container_check`` (as root, with podman and podman-compose; or
``--engine docker``). Not collected as a test: building and starting five containers takes a
minute or more. It

1. makes a base image when none is given (``--base-image``): where no registry is reachable,
   a Debian root file system made with ``debootstrap`` (suite ``--suite``, default trixie:
   Python 3.13 as python3, with its venv module) and imported, trusting the certificates this
   machine trusts (so that its downloads pass a TLS-inspecting proxy, if there is one);
2. builds stand-ins for the official PostgreSQL and Redis images from that base (Debian's
   packages, with the official images' interface: ``POSTGRES_USER``, ``POSTGRES_PASSWORD``,
   ``POSTGRES_DB``, ``pg_isready``, ``redis-cli``) unless ``--postgres-image`` and
   ``--redis-image`` name real ones;
3. builds the app's image (``Dockerfile``, ``BASE_IMAGE`` as its build argument) with the
   compose file's own ``build`` section, then starts the project (PostgreSQL, Redis, web,
   the two task workers) on a free loopback port;
4. waits (bounded) for ``/readyz`` to answer 200 — the database, the workspace, the texts
   folder and a live worker on each queue — then loads the demo (``manage.py load_demo`` in
   the web container), resolves a profile through the API with a token, imports the
   exported workspace back as a background job and waits for the default queue's worker to
   finish it, and checks that a failed login left its counters in Redis (``CACHE_URL``);
5. stops and removes the containers, their volume and network (the images stay, for the
   next run's cache; ``--remove-images`` removes those it built).

Where podman cannot start a container with its defaults, it runs with a configuration of its
own (``CONTAINERS_CONF``, in a temporary folder): without CAP_SYS_RESOURCE no resource limit
may be raised, so the default ulimits are those of this process (the processes' limit no
higher than ``pid_max``, conmon's limit here); on a hybrid cgroup hierarchy (v1
with controllers left in v2) crun refuses to start, so the runtime is runc. See
docs/operations.md ("Containers") and docs/decisions.md.
"""

import argparse
import json
import os
import resource
import secrets
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "ctxcheck"
CAP_SYS_RESOURCE = 24

POSTGRES_CONTAINERFILE = """\
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
RUN apt-get update \\
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql \\
    && rm -rf /var/lib/apt/lists/*
ENV PGDATA=/var/lib/postgresql/data
RUN install -d -m 0700 -o postgres -g postgres "$PGDATA"
COPY entrypoint.sh /usr/local/bin/entrypoint.sh
EXPOSE 5432
USER postgres
ENTRYPOINT ["sh", "/usr/local/bin/entrypoint.sh"]
"""

# The official image's first start, in short: a cluster owned by POSTGRES_USER with its
# password, POSTGRES_DB created, password logins from any address.
POSTGRES_ENTRYPOINT = """\
set -e
bin=$(ls -d /usr/lib/postgresql/*/bin | tail -1)
user=${POSTGRES_USER:-postgres}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    printf '%s\\n' "$POSTGRES_PASSWORD" > /tmp/pwfile
    "$bin/initdb" -D "$PGDATA" -U "$user" --pwfile=/tmp/pwfile -E UTF8 --locale=C.UTF-8 \\
        --auth-local=trust --auth-host=scram-sha-256 > /dev/null
    rm /tmp/pwfile
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    "$bin/pg_ctl" -D "$PGDATA" -o "-c listen_addresses='' -c unix_socket_directories=/tmp" \\
        -w start > /dev/null
    if [ "${POSTGRES_DB:-$user}" != postgres ]; then
        "$bin/createdb" -h /tmp -U "$user" "${POSTGRES_DB:-$user}"
    fi
    "$bin/pg_ctl" -D "$PGDATA" -m fast -w stop > /dev/null
fi
exec "$bin/postgres" -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/tmp
"""

REDIS_CONTAINERFILE = """\
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
RUN apt-get update \\
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server \\
    && rm -rf /var/lib/apt/lists/*
EXPOSE 6379
USER redis
CMD ["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--save", ""]
"""


def run(cmd: list[str], *, timeout: float, env=None, check=True, **kwargs):
    """The command's result; when it fails (and ``check``), its output's end, then exit."""
    if "stdout" not in kwargs and "capture_output" not in kwargs:
        kwargs.update(stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    done = subprocess.run(cmd, timeout=timeout, env=env, text=True, **kwargs)
    if check and done.returncode:
        output = "".join(x for x in (done.stdout, done.stderr) if isinstance(x, str))
        tail = "\n".join(output.splitlines()[-30:])
        raise SystemExit(f"{' '.join(cmd[:6])}: exit {done.returncode}\n{tail}")
    return done


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def podman_conf(folder: Path) -> tuple[dict[str, str], list[str]]:
    """CONTAINERS_CONF for what keeps podman's defaults from starting a container here."""
    notes, containers, engine = [], [], []
    status = Path("/proc/self/status").read_text()
    cap_eff = int(next(x for x in status.splitlines() if x.startswith("CapEff:")).split()[1], 16)
    if not cap_eff >> CAP_SYS_RESOURCE & 1:
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
        pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
        nproc = pid_max if nproc == resource.RLIM_INFINITY else min(nproc, pid_max)
        containers.append(
            f'default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]'
        )
        notes.append(f"no CAP_SYS_RESOURCE: ulimits nofile={nofile}, nproc={nproc}")
    unified = Path("/sys/fs/cgroup/unified/cgroup.controllers")
    if unified.exists() and unified.read_text().strip():
        if not shutil.which("runc"):
            sys.exit("hybrid cgroup hierarchy: crun refuses it; install runc")
        engine.append('runtime = "runc"')
        notes.append("hybrid cgroups (controllers in v2 too): runtime runc")
    if not notes:
        return {}, notes
    conf = folder / "containers.conf"
    conf.write_text("[containers]\n" + "\n".join(containers) + "\n[engine]\n" + "\n".join(engine))
    return {"CONTAINERS_CONF": str(conf)}, notes


def debootstrap_base(engine: str, tag: str, suite: str, mirror: str | None, work: Path, env):
    """A Debian base image made here: python3 with venv, this machine's trusted certificates."""
    if not shutil.which("debootstrap"):
        sys.exit("no --base-image and no debootstrap (apt-get install debootstrap)")
    rootfs = work / "rootfs"
    cmd = ["debootstrap", "--variant=minbase", "--include=python3,python3-venv,ca-certificates"]
    run([*cmd, suite, str(rootfs), *([mirror] if mirror else [])], timeout=900, env=env)
    shutil.rmtree(rootfs / "var/cache/apt/archives", ignore_errors=True)
    bundle = ssl.get_default_verify_paths().openssl_cafile
    if bundle and Path(bundle).is_file():
        shutil.copyfile(bundle, rootfs / "etc/ssl/certs/ca-certificates.crt")
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    certs = "/etc/ssl/certs/ca-certificates.crt"
    changes = ["--change", f"ENV PIP_CERT={certs}", "--change", f"ENV SSL_CERT_FILE={certs}"]
    run([engine, "import", *changes, "-", tag], timeout=300, env=env, stdin=tar.stdout)
    tar.wait(timeout=60)
    shutil.rmtree(rootfs)


def image_exists(engine: str, tag: str, env) -> bool:
    cmd = [engine, "image", "inspect", tag]
    return run(cmd, timeout=60, env=env, check=False, capture_output=True).returncode == 0


def build_stand_in(engine, tag, containerfile, files, base, work: Path, env):
    folder = work / tag.rpartition("/")[2].replace(":", "-")
    folder.mkdir()
    (folder / "Containerfile").write_text(containerfile)
    for name, text in files.items():
        (folder / name).write_text(text)
    cmd = [engine, "build", "--build-arg", f"BASE_IMAGE={base}", "-t", tag, str(folder)]
    run(cmd, timeout=900, env=env)


def http(method: str, url: str, body=None, token: str | None = None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Token {token}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def wait_ready(base_url: str, seconds: float) -> dict:
    deadline = time.monotonic() + seconds
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            status, _, body = http("GET", f"{base_url}/readyz")
            last = f"{status} {body[:300]!r}"
            if status == 200:
                return json.loads(body)
        except OSError as exc:
            last = str(exc)
        time.sleep(1)
    raise SystemExit(f"/readyz not 200 after {seconds:.0f}s: {last}")


def container(engine: str, service: str, env) -> str:
    labels = [f"com.docker.compose.project={PROJECT}", f"com.docker.compose.service={service}"]
    filters = [arg for label in labels for arg in ("--filter", f"label={label}")]
    out = run([engine, "ps", "-q", *filters], timeout=60, env=env, capture_output=True).stdout
    if not out.split():
        raise SystemExit(f"no running container of {service}")
    return out.split()[0]


def exercise(engine: str, base_url: str, env) -> dict[str, float]:
    """The product through the containers: demo, a resolve, an import job, Redis counters."""
    timings = {}
    web = container(engine, "web", env)
    manage = [engine, "exec", web, "python", "manage.py"]
    started = time.monotonic()
    run([*manage, "load_demo", "--url", f"{base_url}/"], timeout=300, env=env)
    timings["load_demo_s"] = time.monotonic() - started
    token_cmd = [*manage, "create_api_key", "demo", "--user-token"]
    token = run(token_cmd, timeout=120, env=env, capture_output=True).stdout.strip()
    request = {
        "profile": "support-answer",
        "input": {"customer_id": "C-1001", "message": "Where is my refund?"},
        "detail": "summary",
    }
    started = time.monotonic()
    status, _, body = http("POST", f"{base_url}/api/v1/resolve", request, token)
    timings["first_resolve_s"] = time.monotonic() - started
    if status != 200 or not json.loads(body).get("output"):
        raise SystemExit(f"resolve: {status} {body[:300]!r}")
    status, _, exported = http("GET", f"{base_url}/api/v1/workspace", token=token)
    if status != 200:
        raise SystemExit(f"export: {status} {exported[:300]!r}")
    started = time.monotonic()
    status, headers, body = http("POST", f"{base_url}/api/v1/workspace?mode=merge",
                                 json.loads(exported), token)  # fmt: skip
    if status != 202:
        raise SystemExit(f"import: {status} {body[:300]!r}")
    job_path = urllib.parse.urlparse(headers["Location"]).path
    deadline = time.monotonic() + 120
    while True:
        job = json.loads(http("GET", f"{base_url}{job_path}", token=token)[2])
        if job["status"] in ("succeeded", "failed") or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    if job["status"] != "succeeded" or job["summary"]["changed"]:
        raise SystemExit(f"import job: {job['status']} {job.get('error') or job.get('summary')}")
    timings["import_job_s"] = time.monotonic() - started
    wrong = {"username": "nobody", "password": "not-a-password"}
    status, _, _ = http("POST", f"{base_url}/api/v1/auth/token", wrong)
    redis = container(engine, "redis", env)
    scan = [engine, "exec", redis, "redis-cli", "--scan", "--pattern", "ctxstudio:*"]
    keys = run(scan, timeout=60, env=env, capture_output=True).stdout.split()
    if status != 400 or not any("login-address-failures" in key for key in keys):
        raise SystemExit(f"failed login: {status}, no counter in Redis ({keys})")
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=("podman", "docker"), default="podman")
    parser.add_argument("--base-image", help="the app's base (default: made with debootstrap)")
    parser.add_argument("--suite", default="trixie", help="debootstrap's Debian suite")
    parser.add_argument("--mirror", help="debootstrap's mirror (default: its own)")
    parser.add_argument("--postgres-image", help="default: a stand-in built from the base")
    parser.add_argument("--redis-image", help="default: a stand-in built from the base")
    parser.add_argument("--timeout", type=float, default=240, help="seconds for /readyz")
    parser.add_argument("--rebuild-base", action="store_true")
    parser.add_argument("--remove-images", action="store_true")
    args = parser.parse_args()
    engine = args.engine
    if os.geteuid() != 0 and engine == "podman":
        sys.exit("run as root (rootful podman)")
    compose = ["podman-compose"] if engine == "podman" else ["docker", "compose"]
    if not shutil.which(compose[0]) or not shutil.which(engine):
        sys.exit(f"needs {engine} and {compose[0]}")
    compose += ["-p", PROJECT, "-f", str(ROOT / "compose.yaml")]
    built: list[str] = []
    timings: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="ctx-container-") as tmp:
        work = Path(tmp)
        env = dict(os.environ)
        if engine == "podman":
            extra, notes = podman_conf(work)
            env.update(extra)
            for note in notes:
                print(f"podman: {note}")
        base = args.base_image or f"localhost/ctxstudio-check-base-{args.suite}"
        if not args.base_image and (args.rebuild_base or not image_exists(engine, base, env)):
            started = time.monotonic()
            debootstrap_base(engine, base, args.suite, args.mirror, work, env)
            timings["base_image_s"] = time.monotonic() - started
            built.append(base)
        stand_ins = {
            "postgres": (args.postgres_image, POSTGRES_CONTAINERFILE,
                         {"entrypoint.sh": POSTGRES_ENTRYPOINT}),
            "redis": (args.redis_image, REDIS_CONTAINERFILE, {}),
        }  # fmt: skip
        images = {}
        for name, (given, containerfile, files) in stand_ins.items():
            images[name] = given or f"localhost/ctxstudio-check-{name}"
            if not given:
                started = time.monotonic()
                build_stand_in(engine, images[name], containerfile, files, base, work, env)
                timings[f"{name}_image_s"] = time.monotonic() - started
                built.append(images[name])
        port = free_port()
        app_image = "localhost/ctxstudio-check-app"
        env.update(
            SECRET_KEY=secrets.token_urlsafe(50),
            BASE_IMAGE=base,
            APP_IMAGE=app_image,
            POSTGRES_IMAGE=images["postgres"],
            REDIS_IMAGE=images["redis"],
            WEB_PORT=str(port),
            SITE_URL=f"http://127.0.0.1:{port}",
        )
        base_url = f"http://127.0.0.1:{port}"
        try:
            started = time.monotonic()
            run([*compose, "build"], timeout=900, env=env)
            timings["app_image_s"] = time.monotonic() - started
            built.append(app_image)
            started = time.monotonic()
            run([*compose, "up", "-d"], timeout=300, env=env)
            ready = wait_ready(base_url, args.timeout)
            timings["up_to_ready_s"] = time.monotonic() - started
            print(f"/readyz: {json.dumps(ready['checks'])}")
            timings.update(exercise(engine, base_url, env))
        finally:
            run([*compose, "down", "-v"], timeout=300, env=env, check=False)
            if engine == "podman":  # podman-compose 1.0 leaves the network behind
                run([engine, "network", "rm", f"{PROJECT}_default"], timeout=60, env=env,
                    check=False)  # fmt: skip
            if args.remove_images:
                run([engine, "rmi", *built], timeout=300, env=env, check=False)
    load = os.getloadavg()
    print("container check: ok (demo loaded, resolve 200, import job by the worker, Redis)")
    print(" ".join(f"{name}={value:.1f}" for name, value in timings.items()))
    print(f"load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
