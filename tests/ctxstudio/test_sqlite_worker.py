"""SQLite with the task worker beside the web server, as ``make run`` serves the studio.

The worker polls for tasks in exclusive transactions, several times a second; a request that
writes (the admin's "Add user", a studio save) must wait its turn instead of failing with
"database is locked" (a 503).
"""

import yaml

from tests.processes import (
    Browser,
    manage,
    migrated_database,
    process_env,
    start_server,
    start_worker,
    stop,
)
from tests.profiles.conftest import small_workspace
from tests.profiles.formdata import editor_form_data

PASSWORD = "a-long-admin-password-1"


def test_sqlite_file__worker_polling__admin_add_user_and_studio_save_succeed(tmp_path):
    # Given a SQLite file with a workspace and an admin,
    database = migrated_database(tmp_path)
    env = process_env(database)
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text(yaml.safe_dump(small_workspace(), sort_keys=False))
    manage(env, "import_workspace", str(workspace))
    manage(
        {**env, "DJANGO_SUPERUSER_PASSWORD": PASSWORD},
        "createsuperuser",
        "--noinput",
        "--username",
        "admin",
        "--email",
        "admin@example.com",
    )
    # and a worker polling it without pause beside the server,
    worker = start_worker(env, interval="0")
    server, base = start_server(env)
    try:
        browser = Browser(base)
        browser.sign_in("admin", PASSWORD)

        # when users are added in the admin, and a profile is saved in the studio,
        added = [
            browser.post_form(
                "/admin/auth/user/add/",
                {
                    "username": f"editor{number}",
                    "usable_password": "true",
                    "password1": PASSWORD,
                    "password2": PASSWORD,
                },
            )[0]
            for number in range(3)
        ]
        saved = []
        for budget in (700, 650, 600):
            status, html = browser.request("/profiles/profile-0/")
            assert status == 200
            data = editor_form_data(html) | {"budget": str(budget)}
            saved.append(browser.request("/profiles/profile-0/save/", data)[0])

        # then each answers as it would on an idle database (a redirect), none with a 503.
        assert (added, saved) == ([302, 302, 302], [302, 302, 302])
        assert worker.poll() is None, worker.stderr.read()
    finally:
        stop(server)
        stop(worker)
