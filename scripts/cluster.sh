#!/usr/bin/env bash
# The public deployment shape on one machine: Redis, REPLICAS production servers, nginx in front.
#
#   bash scripts/cluster.sh                   # http://127.0.0.1:8080, replicas on 8101, 8102
#   PORT=9000 REPLICAS=3 bash scripts/cluster.sh
#
# It installs what it needs and lacks (Debian's nginx and redis-server as root, the Python
# requirements into .venv), starts redis-server, REPLICAS replicas (scripts/production.sh, each
# named replica-N in its MRTR-Replica header, all on the shared Redis and trusting one proxy), and
# nginx with deploy/nginx.conf on PORT. It stays in the foreground; Ctrl-C or SIGTERM stops every
# process it started, and so does any of them dying. Every MRTR_* variable you set reaches every
# replica (MRTR_SECRET_KEYS, MRTR_TOKENS, MRTR_PUBLIC=1, ...); without MRTR_SECRET_KEYS the replicas
# share the key generated in the state directory.
#
# Other knobs: LISTEN_HOST (default 127.0.0.1), REPLICA_PORT (the first replica's, default 8101),
# REDIS_PORT (default 6390), WORKERS and THREADS (per replica, as scripts/production.sh takes them),
# NGINX_USER (nginx's worker user when started as root, default nobody), REDIS_MAXMEMORY (Redis's memory cap,
# default 256mb; full, it refuses writes and evicts nothing).
#
# Behind a TLS proxy (docs/deploy-tls-proxy.md), set MRTR_TRUSTED_PROXIES to that proxy's addresses or
# networks (comma-separated, like 10.0.0.5,2001:db8::/48): nginx then takes the visitor's address from the
# proxy's X-Forwarded-For and its https from X-Forwarded-Proto, and from nobody else. The replicas always
# trust exactly one hop, this nginx, which passes on only what it decided. MRTR_MAX_BODY (bytes) is both
# nginx's and the app's body limit.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PORT="${PORT:-8080}"
LISTEN_HOST="${LISTEN_HOST:-127.0.0.1}"
REPLICAS="${REPLICAS:-2}"
REPLICA_PORT="${REPLICA_PORT:-8101}"
REDIS_PORT="${REDIS_PORT:-6390}"
PYTHON="${PYTHON:-python3}"
NGINX_USER="${NGINX_USER:-nobody}"
REDIS_MAXMEMORY="${REDIS_MAXMEMORY:-256mb}"
export MRTR_MAX_BODY="${MRTR_MAX_BODY:-262144}"
TRUSTED="${MRTR_TRUSTED_PROXIES:-}"

for name in PORT REPLICAS REPLICA_PORT REDIS_PORT MRTR_MAX_BODY; do
    case "${!name}" in
        ''|*[!0-9]*) echo "$name must be a whole number, not '${!name}'" >&2; exit 2 ;;
    esac
done
if [ "$REPLICAS" -lt 1 ] || [ "$REPLICAS" -gt 16 ]; then
    echo "REPLICAS must be between 1 and 16, not $REPLICAS" >&2
    exit 2
fi

say() { printf '==> %s\n' "$*" >&2; }

# The proxies in front, checked here (a typo must not silently trust nobody, or everybody) and written out as
# nginx's lines: `set_real_ip_from` for the real address, a `geo` entry for the scheme it passes on.
real_ip=""
trusted_geo=""
if [ -n "$TRUSTED" ]; then
    for proxy in ${TRUSTED//,/ }; do
        if ! "$PYTHON" -c 'import ipaddress, sys; ipaddress.ip_network(sys.argv[1], strict=False)' "$proxy" \
                2>/dev/null || [[ "$proxy" =~ ^[0-9]+$ ]]; then
            echo "MRTR_TRUSTED_PROXIES lists the proxies in front of nginx by address or network" \
                "(10.0.0.5,2001:db8::/48); '$proxy' is neither" >&2
            exit 2
        fi
        real_ip+="set_real_ip_from $proxy;"$'\n    '
        trusted_geo+="$proxy 1;"$'\n        '
    done
fi
# -- what it needs ------------------------------------------------------------------------------
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
if [ ! -x "$NGINX" ] || ! command -v redis-server >/dev/null 2>&1; then
    say "Installing Debian's nginx and redis-server"
    if [ "$(id -u)" -ne 0 ]; then
        echo "nginx or redis-server is missing; run as root, or install them first" >&2
        exit 2
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends nginx redis-server
    NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
fi
if [ ! -x .venv/bin/python ]; then
    say "Creating virtual environment in .venv"
    "$PYTHON" -m venv .venv
fi
say "Installing runtime dependencies (requirements.txt)"
.venv/bin/python -m pip install -qq --disable-pip-version-check -r requirements.txt

# -- start everything, and stop everything on the way out -----------------------------------------
RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/mrtr-cluster.XXXXXX")"
# nginx's workers write request bodies and large answers into $RUN_DIR/temp: started as root they run as
# NGINX_USER, who must be let through the run folder (0711: through, not read) and own the temp folders.
user_line=""
mkdir -p "$RUN_DIR/temp"
if [ "$(id -u)" -eq 0 ]; then
    user_line="user $NGINX_USER $(id -gn "$NGINX_USER");"
    chmod 0711 "$RUN_DIR"
    for kind in body proxy fastcgi uwsgi scgi; do
        install -d -m 0700 -o "$NGINX_USER" "$RUN_DIR/temp/$kind"
    done
    # A folder above TMPDIR that is closed to that user would bring the 500s back: say so now instead.
    if ! runuser -u "$NGINX_USER" -- test -w "$RUN_DIR/temp/body"; then
        echo "nginx's workers (user $NGINX_USER) cannot reach $RUN_DIR/temp, so every request body over 16 KB" \
            "would fail: a folder above it is closed to them. Set TMPDIR to a folder they can pass (like /tmp)." >&2
        rm -rf "$RUN_DIR"
        exit 2
    fi
fi
PIDS=()
stop() {
    trap - EXIT INT TERM
    for pid in "${PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$RUN_DIR"
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
trap stop EXIT

say "Starting redis-server on 127.0.0.1:$REDIS_PORT"
# A memory cap, and `noeviction`: every spent ticket is a key with a time-to-live, which is exactly what the
# volatile-* policies evict first (and allkeys-* evict anything), and an evicted spent ticket is a replay. Full,
# Redis refuses writes instead (a retryable 503, nothing forgotten); every key the app writes expires by itself
# and everything a visitor can make it store is capped, so it drains (docs/security-notes.md).
redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no --dir "$RUN_DIR" \
    --maxmemory "$REDIS_MAXMEMORY" --maxmemory-policy noeviction --loglevel warning &
PIDS+=($!)

servers=""
sticky=""
upstreams=""
for i in $(seq 1 "$REPLICAS"); do
    port=$((REPLICA_PORT + i - 1))
    say "Starting replica-$i on 127.0.0.1:$port"
    MRTR_REPLICA_NAME="replica-$i" MRTR_REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0" MRTR_TRUSTED_PROXIES=1 \
        PORT="$port" bash scripts/production.sh &
    PIDS+=($!)
    servers+="server 127.0.0.1:$port max_fails=1 fail_timeout=5s;"$'\n        '
    sticky+="~^replica-$i\\. replica_$i;"$'\n        '
    upstreams+="upstream replica_$i { server 127.0.0.1:$port; keepalive 8; }"$'\n    '
done

sed -e "s|@PREFIX@|$RUN_DIR|g" -e "s|@PORT@|$PORT|g" -e "s|@LISTEN_HOST@|$LISTEN_HOST|g" \
    -e "s|@MAX_BODY@|$MRTR_MAX_BODY|g" deploy/nginx.conf \
    | .venv/bin/python -c '
import sys
text = sys.stdin.read()
markers = ("@SERVERS@", "@STICKY@", "@UPSTREAMS_ONE@", "@USER@", "@REAL_IP@", "@TRUSTED_GEO@")
for marker, value in zip(markers, sys.argv[1:]):
    text = text.replace(marker, value.rstrip())
sys.stdout.write(text)' "$servers" "$sticky" "$upstreams" "$user_line" "$real_ip" "$trusted_geo" \
    > "$RUN_DIR/nginx.conf"

# Wait until every replica answers, so nginx never turns the first visitors away.
for i in $(seq 1 "$REPLICAS"); do
    port=$((REPLICA_PORT + i - 1))
    for _ in $(seq 1 300); do
        if curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$port/" 2>/dev/null; then
            break
        fi
        for pid in "${PIDS[@]}"; do
            kill -0 "$pid" 2>/dev/null || { echo "a process of the cluster exited during start-up" >&2; exit 1; }
        done
        sleep 0.1
    done
done

say "Starting nginx on http://$LISTEN_HOST:$PORT"
"$NGINX" -t -q -p "$RUN_DIR" -c "$RUN_DIR/nginx.conf"
"$NGINX" -p "$RUN_DIR" -c "$RUN_DIR/nginx.conf" &
PIDS+=($!)

say "MRTR Lab: http://$LISTEN_HOST:$PORT (replicas replica-1..replica-$REPLICAS, Redis on $REDIS_PORT); Ctrl-C stops it"
# Any process ending ends the cluster: a half cluster would look healthy to nobody.
set +e
wait -n "${PIDS[@]}"
status=$?
echo "a process of the cluster exited (status $status); stopping the rest" >&2
exit 1
