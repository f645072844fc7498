"""The stacks `python -m bench --cluster` measures, each started on free loopback ports and stopped whole.

* `ours-nginx` is the deployment scripts/cluster.sh runs, started here piece by piece the way the script
  starts them: redis-server with the script's arguments, REPLICAS replicas of scripts/production.sh
  (through `compared_servers.granian_app`, which runs the script itself) with the environment the script gives
  each replica (`replica_env`), and nginx with deploy/nginx.conf, its markers filled in as the script
  fills them (`render_nginx_conf`).
* `ours-direct` is one of those replicas (its own Redis, the same environment) with no nginx.
* `sdk-nginx` is the official SDK's server in the best configuration the bench runs it in
  (`uvicorn --workers N`, JSON responses, stateless, one shared `requestState` key) as REPLICAS
  replicas behind the same nginx configuration.
* `floor-direct` and `floor-nginx` are bench/floor.py (two canned answers, no checks) under granian
  with scripts/production.sh's settings, alone and as REPLICAS replicas behind the same nginx: the
  ceiling of this stack on this machine, not a competitor.

The script itself is not run because its nginx configuration cannot be changed from outside and the
bench needs one change to it (`BENCH_RATE`): every client of the load generator comes from 127.0.0.1,
so the per-client request rate deploy/nginx.conf sets for `/mcp` would answer the bench with 429
within a second. Everything is a child process in its own process group (`compared_servers.Served`), so
stopping a stack ends exactly what it started, and a stack that fails half-way stops what it had.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import compared_servers
from bench.compared_servers import ROOT, Served

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
NGINX_CONF = ROOT / "deploy" / "nginx.conf"
CLUSTER_SH = ROOT / "scripts" / "cluster.sh"
#: The bench's one change to deploy/nginx.conf: the `pages` zone's per-client rate (which `/mcp` uses),
#: raised so far that it never refuses the bench's clients, who all share one address. The zone stays
#: and nginx still counts every request in it, so its cost is measured; only the refusals are gone.
BENCH_RATE = "1000000r/s"
#: The secret nginx sends the replicas (X-MRTR-Proxy), made per run as scripts/cluster.sh makes it per start.
PROXY_SECRET = secrets.token_hex(32)
_PAGES_RATE = re.compile(r"(limit_req_zone \$visitor zone=pages:\S+ rate=)\d+r/[sm];")


def cluster_replicas() -> int:
    """scripts/cluster.sh's default REPLICAS, read from the script so it is written down once."""
    match = re.search(r'^REPLICAS="\$\{REPLICAS:-(\d+)\}"$', CLUSTER_SH.read_text(), re.MULTILINE)
    if match is None:
        raise RuntimeError(f"no REPLICAS default found in {CLUSTER_SH}")
    return int(match.group(1))


def render_nginx_conf(prefix: Path, port: int, upstream_ports: Sequence[int]) -> str:
    """deploy/nginx.conf for `upstream_ports`, the markers filled in as scripts/cluster.sh fills them
    (replica N on the N-th port), and the `pages` rate raised to BENCH_RATE."""
    text = NGINX_CONF.read_text()
    text, count = _PAGES_RATE.subn(rf"\g<1>{BENCH_RATE};", text)
    if count != 1:
        raise RuntimeError(f"{NGINX_CONF}: no single `pages` limit_req_zone to lift for the bench")
    indent = "\n        "
    fills = {
        "@PREFIX@": str(prefix),
        "@PORT@": str(port),
        "@LISTEN_HOST@": "127.0.0.1",
        "@LOGS@": str(prefix),
        "@PROXY_SECRET@": PROXY_SECRET,
        "@SERVERS@": indent.join(f"server 127.0.0.1:{p} max_fails=1 fail_timeout=2s;" for p in upstream_ports),
        "@STICKY@": indent.join(f"~^replica-{i}\\. replica_{i};" for i in range(1, len(upstream_ports) + 1)),
        "@UPSTREAMS_ONE@": "\n    ".join(f"upstream replica_{i} {{ server 127.0.0.1:{p}; keepalive 8; }}"
                                         for i, p in enumerate(upstream_ports, start=1)),
        # No proxy in front, the script's default body limit, and nginx's own user (the bench's bodies are small).
        "@USER@": "", "@REAL_IP@": "", "@TRUSTED_GEO@": "", "@MAX_BODY@": "262144",
    }
    for marker, value in fills.items():
        text = text.replace(marker, value)
    left = sorted(set(re.findall(r"@[A-Z_]+@", text)))
    if left:
        raise RuntimeError(f"{NGINX_CONF} has markers the bench does not fill: {', '.join(left)}")
    return text


def nginx_setting(text: str, directive: str) -> str:
    """The value of a one-word nginx directive in `text` (the first one), e.g. `worker_processes`."""
    match = re.search(rf"^\s*{re.escape(directive)}\s+([^;\s]+)", text, re.MULTILINE)
    if match is None:
        raise RuntimeError(f"{NGINX_CONF}: no `{directive}`")
    return match.group(1)


def per_client_connections() -> int:
    """deploy/nginx.conf's per-client connection limit: more bench clients than this would be refused."""
    match = re.search(r"^\s*limit_conn per_client (\d+);", NGINX_CONF.read_text(), re.MULTILINE)
    if match is None:
        raise RuntimeError(f"{NGINX_CONF}: no `limit_conn per_client N;`")
    return int(match.group(1))


@dataclass
class Stack:
    """A deployment under test: the load generator connects to `front`; `parts` are every process
    group it started, in start order. It looks like a `Served` to `run_http` (name, port, cpu_seconds)."""

    name: str
    front: Served
    parts: list[Served]

    @property
    def port(self) -> int:
        return self.front.port

    def cpu_seconds(self) -> float:
        """CPU time of the whole stack (nginx, every replica and worker, Redis): what one flow costs it."""
        return sum(part.cpu_seconds() for part in self.parts)

    def stop(self) -> None:
        """Front first, so nothing new reaches the replicas, then the rest in reverse start order."""
        for part in reversed(self.parts):
            part.stop()


def _build(name: str, build: Callable[[list[Served]], Served]) -> Stack:
    """Run `build`, which appends every part it starts to the list it is given; if it fails, stop them."""
    parts: list[Served] = []
    try:
        front = build(parts)
    except BaseException:
        for part in reversed(parts):
            part.stop()
        raise
    return Stack(name, front, parts)


def redis_maxmemory() -> str:
    """scripts/cluster.sh's default REDIS_MAXMEMORY, read from the script so it is written down once."""
    match = re.search(r'^REDIS_MAXMEMORY="\$\{REDIS_MAXMEMORY:-(\w+)\}"$', CLUSTER_SH.read_text(), re.MULTILINE)
    if match is None:
        raise RuntimeError(f"no REDIS_MAXMEMORY default found in {CLUSTER_SH}")
    return match.group(1)


def redis_options(port: int, directory: str) -> list[str]:
    """redis-server's options as scripts/cluster.sh gives them: loopback, the append-only file synced every second
    in `directory` (tests/bench compares them with the script's)."""
    return ["--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "yes",
            "--appendfsync", "everysec", "--dir", directory,
            "--maxmemory", redis_maxmemory(), "--maxmemory-policy", "noeviction", "--loglevel", "warning"]


def redis(name: str) -> Served:
    tmp = tempfile.TemporaryDirectory(prefix="mrtr-bench-redis-")
    port = compared_servers.free_port()
    return compared_servers.spawn(name, [REDIS_SERVER, *redis_options(port, tmp.name)], {}, port, tmp, children=0)


def nginx(name: str, upstream_ports: Sequence[int]) -> Served:
    """nginx with deploy/nginx.conf in front of `upstream_ports`, checked with `nginx -t` first as the
    script does. `-e` sends the few lines nginx logs before it reads the configuration to the run's
    own directory instead of /var/log/nginx; nothing else differs from the script's command."""
    tmp = tempfile.TemporaryDirectory(prefix="mrtr-bench-nginx-")
    prefix = Path(tmp.name)
    port = compared_servers.free_port()
    try:  # until spawn owns the directory (its Served removes it on stop), remove it here on any failure
        text = render_nginx_conf(prefix, port, upstream_ports)
        conf = prefix / "nginx.conf"
        conf.write_text(text)
        (prefix / "temp").mkdir()  # nginx makes the temp folders themselves, not their parent
        base = [NGINX, "-p", str(prefix), "-e", str(prefix / "error.log"), "-c", str(conf)]
        checked = subprocess.run([*base, "-t", "-q"], capture_output=True, text=True, timeout=30)
        if checked.returncode != 0:
            raise RuntimeError(f"{name}: nginx -t refused the configuration:\n{checked.stderr[-2000:]}")
        workers = nginx_setting(text, "worker_processes")
        children = (os.cpu_count() or 1) if workers == "auto" else int(workers)
    except BaseException:
        tmp.cleanup()
        raise
    return compared_servers.spawn(name, base, {}, port, tmp, children=children)


def replica_env(index: int, redis_url: str) -> dict[str, str]:
    """What scripts/cluster.sh sets for replica `index` besides PORT (tests/bench checks it still does)."""
    return {"MRTR_REPLICA_NAME": f"replica-{index}", "MRTR_REDIS_URL": redis_url, "MRTR_TRUSTED_PROXIES": "1",
            "MRTR_PROXY_SECRET": PROXY_SECRET}


def _our_replica(name: str, index: int, redis_url: str, workers: int, threads: int) -> Served:
    return compared_servers.granian_app(workers=workers, threads=threads, env=replica_env(index, redis_url),
                               name=f"{name}-replica-{index}")


def ours_nginx(name: str, *, replicas: int, workers: int, threads: int) -> Stack:
    def build(parts: list[Served]) -> Served:
        parts.append(store := redis(f"{name}-redis"))
        url = f"redis://127.0.0.1:{store.port}/0"
        for i in range(1, replicas + 1):
            parts.append(_our_replica(name, i, url, workers, threads))
        parts.append(front := nginx(f"{name}-nginx", [p.port for p in parts[1:]]))
        return front

    return _build(name, build)


def ours_direct(name: str, *, workers: int, threads: int) -> Stack:
    def build(parts: list[Served]) -> Served:
        parts.append(store := redis(f"{name}-redis"))
        parts.append(front := _our_replica(name, 1, f"redis://127.0.0.1:{store.port}/0", workers, threads))
        return front

    return _build(name, build)


def sdk_nginx(name: str, *, replicas: int, workers: int) -> Stack:
    """The SDK's replicas share `compared_servers.BENCH_KEY`, so either can open the other's requestState. nginx
    forwards `Host: 127.0.0.1` (no port), which the SDK's loopback DNS-rebinding check refuses unless
    told; it is told, with the check left on."""
    def build(parts: list[Served]) -> Served:
        for i in range(1, replicas + 1):
            parts.append(compared_servers.sdk_app(workers=workers, json_response=True, stateless=True,
                                         allowed_hosts="127.0.0.1", name=f"{name}-replica-{i}"))
        parts.append(front := nginx(f"{name}-nginx", [p.port for p in parts]))
        return front

    return _build(name, build)


def floor_direct(name: str, *, workers: int, threads: int) -> Stack:
    def build(parts: list[Served]) -> Served:
        parts.append(front := compared_servers.floor_app(workers=workers, threads=threads, name=name))
        return front

    return _build(name, build)


def floor_single_use_direct(name: str, *, workers: int, threads: int) -> Stack:
    """bench/floor_single_use.py alone, with a Redis of its own, as `ours_direct` has."""
    def build(parts: list[Served]) -> Served:
        parts.append(store := redis(f"{name}-redis"))
        parts.append(front := compared_servers.floor_app(workers=workers, threads=threads, name=name,
                                                         redis_url=f"redis://127.0.0.1:{store.port}/0"))
        return front

    return _build(name, build)


def floor_nginx(name: str, *, replicas: int, workers: int, threads: int) -> Stack:
    def build(parts: list[Served]) -> Served:
        for i in range(1, replicas + 1):
            parts.append(compared_servers.floor_app(workers=workers, threads=threads, name=f"{name}-replica-{i}"))
        parts.append(front := nginx(f"{name}-nginx", [p.port for p in parts]))
        return front

    return _build(name, build)
