#!/bin/sh
# The web container's command (Dockerfile, compose.yaml): wait for PostgreSQL (at most
# DB_WAIT_SECONDS, 60 by default), apply the migrations, then serve with gunicorn
# (scripts/gunicorn.conf.py: GUNICORN_BIND, GUNICORN_WORKERS...).
set -e
waited=0
until python scripts/pg_ready.py "$DATABASE_URL"; do
    waited=$((waited + 1))
    if [ "$waited" -ge "${DB_WAIT_SECONDS:-60}" ]; then
        echo "container_web.sh: PostgreSQL not reachable after ${waited}s" >&2
        exit 1
    fi
    sleep 1
done
python manage.py migrate --noinput
exec gunicorn -c scripts/gunicorn.conf.py ctxstudio.wsgi
