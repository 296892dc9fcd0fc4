# Context Studio's image: gunicorn + whitenoise (the web service) and, with another command,
# the task workers (manage.py db_worker). compose.yaml runs it beside PostgreSQL and Redis
# (docs/operations.md, "Deploy").
#
# BASE_IMAGE: any Debian-like image with Python 3.12+ as `python3` (and its venv module).
# The default is the official slim image; where no registry is reachable, a locally made
# Debian base can stand in (tests/perf/container_check.py builds one with debootstrap).
ARG BASE_IMAGE=python:3.12-slim
FROM ${BASE_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH

# The pinned, hash-checked runtime dependencies first: this layer is rebuilt only when the
# lock file changes, not on every code change.
RUN python3 -m venv /opt/venv
COPY requirements/base.txt /app/requirements/base.txt
RUN pip install --no-cache-dir --require-hashes -r /app/requirements/base.txt

WORKDIR /app
COPY . /app
# Static files collected at build time (whitenoise serves them); the key only loads settings.
RUN DEBUG=false SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput -v 0

# The service's own user; var/ (its texts folder and the metrics' files) is its own and
# writable by nobody else (docs/operations.md, MATERIAL_TEXTS_DIR).
RUN useradd --system --home-dir /app --no-create-home --shell /usr/sbin/nologin ctxstudio \
    && mkdir -m 0700 /app/var \
    && chown ctxstudio:ctxstudio /app/var
USER ctxstudio

ENV DEBUG=false \
    GUNICORN_BIND=0.0.0.0:8000
EXPOSE 8000
CMD ["sh", "scripts/container_web.sh"]
