"""`python -m bench --cluster` without starting anything: its stacks are started as scripts/cluster.sh and
scripts/production.sh start theirs, the floor answers with its two canned messages and nothing else, and the
section it records lands in RESULTS.md where a full run keeps it."""

from __future__ import annotations

import argparse
import ast
import io
import re
import shlex
from pathlib import Path

import pytest
import redis

from bench import __main__ as bench_main
from bench import cluster, compared_servers, floor, floor_single_use, recorded
from loopback import loadgen
from loopback.redis_server import RedisServer

CLUSTER_SH = cluster.CLUSTER_SH.read_text()


def _joined(script: str) -> str:
    return script.replace("\\\n", " ")


def test_the_nginx_configuration_is_filled_as_the_script_fills_it() -> None:
    in_conf = set(re.findall(r"@[A-Z_]+@", cluster.NGINX_CONF.read_text()))
    in_script = set(re.findall(r"@[A-Z_]+@", CLUSTER_SH))
    assert in_conf == in_script, "deploy/nginx.conf and scripts/cluster.sh disagree on the markers"
    text = cluster.render_nginx_conf(Path("/run/x"), 9000, [9101, 9102])
    assert not re.search(r"@[A-Z_]+@", text)
    assert "listen 127.0.0.1:9000;" in text
    for i, port in enumerate((9101, 9102), start=1):
        assert f"server 127.0.0.1:{port} max_fails=1 fail_timeout=2s;" in text
        assert f"upstream replica_{i} {{ server 127.0.0.1:{port}; keepalive 8; }}" in text
        assert f"~^replica-{i}\\. replica_{i};" in text


def test_the_only_change_to_the_nginx_configuration_is_the_pages_rate() -> None:
    deployed = cluster.NGINX_CONF.read_text()
    text = cluster.render_nginx_conf(Path("/run/x"), 9000, [9101])
    assert f"zone=pages:10m rate={cluster.BENCH_RATE};" in text
    changed = [(a, b) for a, b in zip(deployed.splitlines(), text.splitlines(), strict=True)
               if a != b and not re.search(r"@[A-Z_]+@", a)]
    assert len(changed) == 1 and "zone=pages" in changed[0][0], changed
    # The strict doors and the per-client connection limit stay as deployed.
    assert "zone=strict:10m rate=30r/m;" in text
    assert cluster.per_client_connections() == int(re.search(r"limit_conn per_client (\d+);", deployed).group(1))


def test_replicas_get_the_environment_the_script_gives_them() -> None:
    line = next(x for x in _joined(CLUSTER_SH).splitlines() if "MRTR_REPLICA_NAME=" in x)
    assert set(re.findall(r"(MRTR_[A-Z_]+)=", line)) == set(cluster.replica_env(1, "redis://x"))
    assert 'MRTR_TRUSTED_PROXIES=1' in line and cluster.replica_env(1, "u")["MRTR_TRUSTED_PROXIES"] == "1"
    assert 'MRTR_REPLICA_NAME="replica-$i"' in line and cluster.replica_env(2, "u")["MRTR_REPLICA_NAME"] == "replica-2"
    assert cluster.cluster_replicas() == int(re.search(r'REPLICAS="\$\{REPLICAS:-(\d+)\}"', CLUSTER_SH).group(1))


def test_redis_is_started_with_the_scripts_options() -> None:
    line = next(x.strip() for x in _joined(CLUSTER_SH).splitlines() if x.strip().startswith("redis-server "))
    script = [w.replace("$REDIS_PORT", "6390").replace("$DATA_DIR/redis", "/d").replace("$REDIS_MAXMEMORY", "256mb")
              .replace("$REDIS_APPENDFSYNC", "everysec") for w in shlex.split(line)[1:-1]]
    assert cluster.redis_options(6390, "/d") == script


def test_the_floor_runs_under_production_sh_s_granian_options() -> None:
    line = re.search(r'^exec "\$GRANIAN" (.*)$', _joined(compared_servers.PRODUCTION_SH.read_text()), re.MULTILINE)
    assert line is not None
    *options, app = shlex.split(line.group(1))
    assert app == "app:create_app"
    argv = compared_servers.production_granian_argv(port=8001, workers=3, threads=4, target="bench.floor:create_app")
    expected = [{"$PORT": "8001", "$WORKERS": "3", "$THREADS": "4"}.get(o, o) for o in options if o != "$@"]
    assert argv[1:] == [*expected, "bench.floor:create_app"]
    assert argv[0].endswith("granian")


def test_an_unknown_variable_in_production_sh_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "production.sh"
    script.write_text('exec "$GRANIAN" --port "$PORT" --backlog "$BACKLOG" \\\n    app:create_app\n')
    monkeypatch.setattr(compared_servers, "PRODUCTION_SH", script)
    with pytest.raises(RuntimeError, match=r"\$BACKLOG"):
        compared_servers.production_granian_argv(port=1, workers=1, threads=2, target="x:y")


def _call(body: bytes) -> tuple[str, dict[str, str], bytes]:
    seen: dict[str, object] = {}

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        seen["status"], seen["headers"] = status, dict(headers)

    out = b"".join(floor.app({"wsgi.input": io.BytesIO(body)}, start_response))
    return str(seen["status"]), seen["headers"], out  # type: ignore[return-value]


def test_the_floor_answers_a_whole_flow_with_its_two_canned_messages() -> None:
    class FloorConn:
        """Stands in for loadgen.Conn: the same flow code, the floor called in-process."""

        def post(self, body: bytes) -> tuple[int, bytes]:
            status, headers, out = _call(body)
            assert int(headers["Content-Length"]) == len(out)
            return int(status.split()[0]), out

    loadgen.one_flow(FloorConn(), 2)  # type: ignore[arg-type]
    assert _call(b"{}")[2] == floor.ROUND_ONE
    assert _call(b'{"params": {"requestState": "anything"}}')[2] == floor.RETRY
    assert _call(b"not json at all")[2] == floor.ROUND_ONE  # it parses nothing, so it refuses nothing


def test_the_floor_imports_nothing_that_could_check() -> None:
    tree = ast.parse(Path(floor.__file__).read_text())
    imported = {n.name for node in ast.walk(tree) if isinstance(node, ast.Import) for n in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= {"__future__", "json", "collections.abc", "typing"}


@pytest.mark.external  # a redis-server
def test_the_single_use_floor_spends_each_retry_s_ticket_in_redis_and_nothing_else(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with RedisServer() as server:
        monkeypatch.setenv("FLOOR_REDIS_URL", server.url)
        app = floor_single_use.create_app()
        client = redis.Redis.from_url(server.url)
        seen: list[str] = []
        for body in (b"{}", b'{"params": {"requestState": "x"}}', b'{"params": {"requestState": "x"}}'):
            out = b"".join(app({"wsgi.input": io.BytesIO(body)}, lambda status, headers: seen.append(status)))
            assert out == (floor.RETRY if b"requestState" in body else floor.ROUND_ONE)
        assert seen == ["200 OK"] * 3
        spent = [client.get(key) for key in client.scan_iter("mrtr:redeemed:*")]
        assert spent == [b"d", b"d"]  # two retries, two fresh ids, each claimed then committed; round one none
        assert all(0 < client.pttl(key) <= 120_000 for key in client.scan_iter("mrtr:redeemed:*"))
    monkeypatch.delenv("FLOOR_REDIS_URL")
    assert floor_single_use.create_app() is floor.app


def test_the_section_goes_before_the_appendix_and_replaces_itself() -> None:
    heading = bench_main.analysis_heading()
    assert heading.startswith("## ")
    report = f"# Benchmark results\n\n## Targets\n\nall met\n\n{heading}\n\nfindings\n"
    section = recorded.CLUSTER
    first = f"{section.begin}\n## Cluster\nold\n{section.end}"
    once = section.put(report, first, before=heading)
    assert once.index("all met") < once.index(section.begin) < once.index(heading)
    assert section.find(once) == first
    second = f"{section.begin}\n## Cluster\nnew\n{section.end}"
    twice = section.put(once, second, before=heading)
    assert section.find(twice) == second and "old" not in twice and twice.endswith("findings\n")
    assert section.find(report) is None
    assert section.put("# x\n", first, before="## nowhere").endswith(first + "\n")


def test_a_full_run_carries_every_separately_recorded_section_over() -> None:
    heading = bench_main.analysis_heading()
    cluster_part = f"{recorded.CLUSTER.begin}\n## Cluster\nkept\n{recorded.CLUSTER.end}"
    pyodide_part = f"{recorded.PYODIDE.begin}\n## In the page\nkept too\n{recorded.PYODIDE.end}"
    old = f"# old\n\n{cluster_part}\n\n{pyodide_part}\n\n{heading}\n\nfindings\n"
    fresh = f"# Benchmark results\n\n## Targets\n\nall met\n\n{heading}\n\nfindings\n"
    merged = recorded.carry_over(fresh, old, before=heading)
    assert recorded.CLUSTER.find(merged) == cluster_part and recorded.PYODIDE.find(merged) == pyodide_part
    assert merged.index("all met") < merged.index(cluster_part) < merged.index(pyodide_part) < merged.index(heading)
    assert recorded.carry_over(fresh, "# nothing recorded\n", before=heading) == fresh


def _result(rate: float, steal: float) -> loadgen.RunResult:
    return loadgen.RunResult(clients=1, seconds=1.0, flows=int(rate), errors=0, latencies_ms=[1.0, 2.0, 3.0],
                             client_cpu_s=0.1, server_cpu_s=rate / 1000, steal_pct=steal)


def test_the_section_shows_x_of_floor_the_ratios_and_the_steal() -> None:
    args = argparse.Namespace(workers=2, threads=2, replicas=2, seconds=1.0, warmup=0.3, rounds=1, note="idle")
    chosen = bench_main.stack_configs(args)
    rates = {"ours-nginx-2": 1000, "ours-direct": 1200, "sdk-nginx-2": 250, "floor-nginx-2": 4000,
             "floor-direct": 8000, "floor-single-use-direct": 2400}
    results = {c.name: {8: [_result(rates[c.name], 12.0)]} for c in chosen}
    summary = {name: {8: bench_main.summarize(rs[8])} for name, rs in results.items()}
    text = bench_main.cluster_section(args, chosen, [8], results, summary, "python -m bench --cluster", "now",
                                      "0.1 0.1 0.1", "1.0 1.0 1.0")
    assert text.startswith(recorded.CLUSTER.begin) and text.endswith(recorded.CLUSTER.end)
    assert "| 8 | `ours-nginx-2` | 1000 | 1000 | 0.25x |" in text
    assert "| 8 | `ours-direct` | 1200 | 1200 | 0.15x |" in text
    assert "| 8 | `sdk-nginx-2` | 250 | 250 | 0.06x |" in text
    assert "| `ours-nginx-2` / `sdk-nginx-2` | 4.00x |" in text
    assert "| `ours-nginx-2` / `ours-direct` | 0.83x |" in text
    assert "| 8 | `floor-single-use-direct` | 2400 | 2400 | 0.30x |" in text  # of the floor without single use
    assert "| `ours-direct` / `floor-single-use-direct` | 0.50x |" in text
    assert "a ceiling, not a competitor" in text
    assert "median 12.0%" in text and "Shared host" in text  # the steal note, as the full report gives it


def test_the_section_checks_issue_36s_targets_at_8_and_32_clients() -> None:
    args = argparse.Namespace(workers=2, threads=2, replicas=2, seconds=1.0, warmup=0.3, rounds=1, note="idle")
    chosen = bench_main.stack_configs(args)
    rates = {"ours-nginx-2": 3500, "ours-direct": 6000, "sdk-nginx-2": 1000, "floor-nginx-2": 6000,
             "floor-direct": 13000, "floor-single-use-direct": 13000}
    results = {c.name: {lvl: [_result(rates[c.name], 0.1)] for lvl in (8, 32)} for c in chosen}
    summary = {name: {lvl: bench_main.summarize(rs[lvl]) for lvl in (8, 32)} for name, rs in results.items()}
    text = bench_main.cluster_section(args, chosen, [8, 32], results, summary, "python -m bench --cluster", "now",
                                      "0.1 0.1 0.1", "1.0 1.0 1.0")
    assert "| `ours-nginx-2` at least 0.5x `floor-nginx-2` (flows/s) | 8 | yes | 0.58x |" in text
    assert "| `ours-direct` at least 0.5x `floor-direct` (flows/s) | 32 | **MISSED** | 0.46x |" in text
    assert "| `ours-nginx-2` at least 3x `sdk-nginx-2` (flows/s) | 32 | yes | 3.50x |" in text
    proposed = "| proposed: `ours-direct` at least 0.5x `floor-single-use-direct` (flows/s) | 8 | **MISSED** | 0.46x |"
    assert proposed in text
    assert "| no failed flow on any stack | 8 | yes | 0 |" in text
    # every stack's p99 is the same 3 ms here: a ratio of 1.00 against the record's 2.66 and 2.94
    assert "| p99 of `ours-nginx-2` over `floor-nginx-2`'s no worse than before issue 36 (2.66x) | 32 | yes |" in text
