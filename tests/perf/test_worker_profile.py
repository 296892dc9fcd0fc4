"""The worker profile's grouping of py-spy samples by step (``tests.perf.worker_profile``):
the deepest step a sample is in, the decision log's writer whatever it calls, a generic
group for what no step claims, and shares read from py-spy's raw (collapsed) format."""

from tests.perf.worker_profile import OTHER, shares, step_of

WSGI = "handle_request (gunicorn/workers/sync.py:180)"
DJANGO = "__call__ (django/core/handlers/wsgi.py:124)"
LEAN = "answer (profiles/api/lean.py:84)"


def stack(*frames: str) -> list[str]:
    return [WSGI, DJANGO, *frames]


def test_a_sample__counts_towards_the_deepest_step_it_is_in():
    engine = stack(
        LEAN,
        "workspace_resolved (profiles/workspace/cache.py:560)",
        "CompiledWorkspace.resolve_json (resolver/compiled.py:179)",
        "run_stages (resolver/engine.py:434)",
        "Postings.bm25 (resolver/postings.py:211)",
    )
    statement = stack(
        LEAN,
        "DatabaseSource._read (profiles/workspace/served.py:374)",
        "served_read (profiles/workspace/served.py:301)",
        "Cursor.execute (psycopg/cursor.py:97)",
    )

    assert step_of(engine) == "engine: stages (select, BM25, admit, render)"
    assert step_of(statement) == "served read: the statement (psycopg, socket)"
    assert step_of(stack(LEAN, "_body (profiles/api/lean.py:122)")) == "lean door: body parse"


def test_the_decision_log__its_writer_thread_counts_whole__what_no_step_claims_is_generic():
    writer = [
        "Thread._bootstrap (threading.py:1002)",
        "_BackgroundWriter._run (profiles/resolution/decision_log.py:180)",
        "_BackgroundWriter._write (profiles/resolution/decision_log.py:185)",
        "Cursor.execute (psycopg/cursor.py:97)",
    ]

    assert step_of(writer) == "decision log (writer thread)"
    assert step_of(stack("process_response (django/middleware/csp.py:40)")) == (
        "Django (WSGI handler, kept middleware)"
    )
    assert step_of([WSGI]) == "gunicorn"
    assert step_of(["<module> (elsewhere.py:1)"]) == OTHER


def test_shares__read_from_py_spys_raw_format__by_step_with_their_innermost_frames(tmp_path):
    raw = tmp_path / "worker-1.txt"
    body = ";".join(stack(LEAN, "_body (profiles/api/lean.py:122)"))
    raw.write_text(f"{';'.join([WSGI])} 1\n{body} 3\nnot a sample line\n")

    samples, found = shares([raw, tmp_path / "missing.txt"])

    assert samples == 4
    assert found == {
        "lean door: body parse": (75.0, ["_body (api/lean.py) 75.0 %"]),
        "gunicorn": (25.0, ["handle_request (workers/sync.py) 25.0 %"]),
    }
