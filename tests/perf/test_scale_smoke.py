"""Smoke test of the scale benchmark's generator, ``tests.perf.desk`` (no server, no database):
the generated desk is deterministic, has the shape issue 20 describes, and is a valid
workspace."""

import functools
import json
import statistics

from resolver import compile_workspace, validate_workspace
from tests.perf import desk as desks
from tests.perf import workloads


@functools.cache
def small_desk():
    return desks.generate_desk(200, tickets_per_customer=10)


def test_generate_desk__same_arguments__same_desk_and_another_seed_another_one():
    desk = small_desk()

    again = desks.generate_desk(200, tickets_per_customer=10)
    other = desks.generate_desk(200, tickets_per_customer=10, seed=desks.SEED + 1)

    assert again.document() == desk.document()
    assert other.items["tickets"] != desk.items["tickets"]
    assert other.skeleton == desk.skeleton


def test_generate_desk__200_tickets__customers_kb_and_policies_as_the_issue_describes():
    desk = small_desk()

    tickets = desk.items["tickets"]
    owners = [ticket["metadata"]["customer_id"] for ticket in tickets]
    assert len(tickets) == 200
    assert len(desk.customers) == 20
    assert {owners.count(customer) for customer in desk.customers} == {10}
    assert len(desk.items["kb"]) == 20
    assert len(desk.items["policies"]) == desks.POLICIES
    dated = [ticket for ticket in tickets if "updated" in ticket["metadata"]]
    assert 0.9 * len(tickets) <= len(dated) < len(tickets)
    assert all(layer.get("items") is None for layer in desk.skeleton["layers"])
    tickets_layer = next(layer for layer in desk.skeleton["layers"] if layer["key"] == "tickets")
    assert tickets_layer["itemFilter"] == {"customer_id": "customer_id"}
    terms = [
        len(set(workloads.spec_tokens(f"{item['title']}\n{item['body']}")))
        for item in tickets + desk.items["kb"]
    ]
    assert 58 <= statistics.mean(terms) <= 72


def test_generate_desk__document__is_valid_and_resolves_a_customer_request():
    desk = small_desk()
    document = desk.document()
    request = desks.desk_requests(desk, 1, seed=1)[0]

    resolution = compile_workspace(document).resolve(request)

    assert validate_workspace(document) == []
    tickets = next(layer for layer in resolution["layers"] if layer["layer"] == "tickets")
    customer = request["input"]["customer_id"]
    by_path = {item["path"]: item for item in desk.items["tickets"]}
    assert tickets["rendered"]["items"]
    assert {by_path[path]["metadata"]["customer_id"] for path in tickets["rendered"]["items"]} == {
        customer
    }


def test_write_desk__batches_of_100__ndjson_lines_are_the_items_in_order(tmp_path):
    desk = small_desk()

    written = desks.write_desk(desk, tmp_path, lines=100)

    assert json.loads((tmp_path / "workspace.json").read_text()) == desk.skeleton
    ticket_files = sorted(path for path in written if path.name.startswith("tickets-"))
    assert len(ticket_files) == 2
    lines = [line for path in ticket_files for line in path.read_text().splitlines()]
    assert [json.loads(line) for line in lines] == desk.items["tickets"]


def test_own_postgres_settings__every_line_sets_one_parameter():
    from tests.perf.own_postgres import settings_text

    lines = settings_text().splitlines()

    assert "shared_buffers = 2GB" in lines
    assert all(len(line.split(" = ")) == 2 for line in lines)


def test_scale_report__a_text_figure_beside_numbers__shown_as_it_is_without_an_exponent():
    from tests.perf.scale_bench import format_report

    small = {"tickets": 10, "kb": 1, "postgres": "15.19: shared_buffers 2GB", "ingest_s": 1.0}
    large = {**small, "tickets": 100, "ingest_s": 10.0}
    for figures in (small, large):
        figures |= {"load_start": "0", "load_end": "0"}

    report = format_report([small, large]).splitlines()

    assert "| PostgreSQL | 15.19: shared_buffers 2GB | 15.19: shared_buffers 2GB |  |" in report
    ingest = next(line for line in report if line.startswith("| bulk ingest"))
    assert ingest.endswith("| 1.0 s | 10.0 s | 1.00 |")


def test_machine_busy_share__idle_and_io_wait__are_not_busy():
    before = [100, 0, 50, 1_000, 10, 0, 0, 0, 0, 0]
    after = [160, 0, 70, 1_060, 30, 0, 0, 0, 0, 0]  # 80 busy, 60 idle, 20 waiting on I/O

    from tests.perf.scale_bench import machine_busy_share

    assert machine_busy_share(before, after) == 0.5


def test_engine_cpu__both_engines__the_served_one_answers_as_the_held_one():
    from tests.perf.scale_bench import engine_cpu

    desk = small_desk()
    figures = {"worker_cpu_per_request_ms": 5.0}

    # The served engine's answers are checked against the held desk's inside (it raises).
    engine_cpu(compile_workspace(desk.document()), desk, figures, count=20)

    assert figures["engine_cpu_per_request_ms"] > 0
    assert figures["engine_served_cpu_per_request_ms"] > 0
    ratio = 5.0 / figures["engine_served_cpu_per_request_ms"]
    assert figures["worker_to_engine_served_cpu"] == round(ratio, 1)
