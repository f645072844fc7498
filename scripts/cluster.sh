#!/usr/bin/env bash
# The public deployment shape on one machine: Redis, REPLICAS production servers, nginx in front.
#
#   bash scripts/cluster.sh                   # http://127.0.0.1:8080, replicas on 8101, 8102
#   PORT=9000 REPLICAS=3 bash scripts/cluster.sh
#
# It installs what it needs and lacks (Debian's nginx and redis-server as root, the Python
# requirements into .venv), starts redis-server, REPLICAS replicas (scripts/production.sh, each
# named replica-N in its MRTR-Replica header, all on the shared Redis and trusting one proxy), and
# nginx with deploy/nginx.conf on PORT. It stays in the foreground as their supervisor: whatever exits is
# started again while the rest serve (one that keeps exiting ends the cluster). Ctrl-C or SIGTERM stops
# everything in order: nginx finishes the requests it holds, then the replicas stop, then Redis syncs and
# stops. Every MRTR_* variable you set reaches every replica (MRTR_SECRET_KEYS, MRTR_TOKENS, MRTR_PUBLIC=1,
# ...); without MRTR_SECRET_KEYS the replicas share the key generated in the state directory.
#
# What outlives a stop, in CLUSTER_DATA_DIR (default: the state directory's cluster/ folder, MRTR_STATE_DIR or
# ~/.local/state/mrtr-lab): Redis's append-only file (every spent ticket, so single use survives a restart) and
# nginx's logs.
#
# Other knobs: LISTEN_HOST (default 127.0.0.1), REPLICA_PORT (the first replica's, default 8101),
# REDIS_PORT (default 6390), WORKERS and THREADS (per replica, as scripts/production.sh takes them),
# NGINX_USER (nginx's worker user when started as root, default nobody), REDIS_MAXMEMORY (Redis's memory cap,
# default 256mb; full, it refuses writes and evicts nothing), REDIS_APPENDFSYNC (everysec or always),
# STOP_GRACE (seconds nginx may take to finish what it holds on a stop, default 20), RESTART_LIMIT (restarts
# of one process within a minute before the cluster gives up, default 5).
#
# MRTR_PUBLIC_URL is where learners open the site: every absolute address the app writes (URL-mode pages, the
# embed snippet, LTI's addresses) starts there, whatever Host a request names. Unset, it is
# http://LISTEN_HOST:PORT; behind a TLS proxy it must be set (the proxy's https address).
#
# Behind a TLS proxy (docs/deploy-tls-proxy.md), set MRTR_TRUSTED_PROXIES to that proxy's addresses or
# networks (comma-separated, like 10.0.0.5,2001:db8::/48): nginx then takes the visitor's address from the
# proxy's X-Forwarded-For and its https from X-Forwarded-Proto, and from nobody else. The replicas trust
# exactly one hop, this nginx, which passes on only what it decided, with a secret made at start that no other
# process knows. MRTR_MAX_BODY (bytes) is both nginx's and the app's body limit.
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
REDIS_APPENDFSYNC="${REDIS_APPENDFSYNC:-everysec}"
STOP_GRACE="${STOP_GRACE:-20}"
RESTART_LIMIT="${RESTART_LIMIT:-5}"
export MRTR_MAX_BODY="${MRTR_MAX_BODY:-262144}"
TRUSTED="${MRTR_TRUSTED_PROXIES:-}"

for name in PORT REPLICAS REPLICA_PORT REDIS_PORT MRTR_MAX_BODY STOP_GRACE RESTART_LIMIT; do
    case "${!name}" in
        ''|*[!0-9]*) echo "$name must be a whole number, not '${!name}'" >&2; exit 2 ;;
    esac
done
case "$REDIS_APPENDFSYNC" in
    always|everysec) ;;
    *) echo "REDIS_APPENDFSYNC must be always or everysec, not '$REDIS_APPENDFSYNC'" >&2; exit 2 ;;
esac
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
if [ -z "${MRTR_PUBLIC_URL:-}" ]; then
    if [ -n "$TRUSTED" ]; then
        echo "MRTR_PUBLIC_URL must say where learners open the site behind the proxy (like" \
            "https://lab.example.org): the app writes its absolute addresses from it, never from a request's Host" >&2
        exit 2
    fi
    MRTR_PUBLIC_URL="http://$LISTEN_HOST:$PORT"
fi
export MRTR_PUBLIC_URL
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
# Two folders: RUN_DIR (nginx's configuration and temp files, made now and removed on the way out) and DATA_DIR
# (kept across stop and start: Redis's append-only file, which holds every spent ticket, and nginx's logs). A
# spent ticket Redis forgot on a restart could be completed again within its lifetime.
STATE_DIR="${MRTR_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/mrtr-lab}"
DATA_DIR="${CLUSTER_DATA_DIR:-$STATE_DIR/cluster}"
mkdir -p "$DATA_DIR/redis" "$DATA_DIR/logs"
chmod 0700 "$DATA_DIR/redis"
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

# The replicas believe X-Forwarded-* only from a request that carries this secret, which only nginx sends (its
# configuration file is readable by root alone): another process on the machine that connects to a replica
# directly is counted as itself. Made anew at every start, never written anywhere but there.
PROXY_SECRET="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"

declare -A ROLE=()          # pid -> what it runs: redis, nginx, replica-N
declare -A RESTARTS=()      # role -> start times (seconds) within the last minute
STOPPING=0

start_redis() {
    # A memory cap, and `noeviction`: every spent ticket is a key with a time-to-live, which is exactly what the
    # volatile-* policies evict first (and allkeys-* evict anything), and an evicted spent ticket is a replay.
    # Full, Redis refuses writes instead (a retryable 503, nothing forgotten); every key the app writes expires by
    # itself and everything a visitor can make it store is capped, so it drains (docs/security-notes.md).
    # Append-only, synced every second (REDIS_APPENDFSYNC=always: at every write), in DATA_DIR: a restart keeps
    # every spent ticket (a clean stop syncs everything; a crash loses at most the last second).
    redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly yes \
        --appendfsync "$REDIS_APPENDFSYNC" --dir "$DATA_DIR/redis" \
        --maxmemory "$REDIS_MAXMEMORY" --maxmemory-policy noeviction --loglevel warning &
    ROLE[$!]=redis
}

start_replica() {
    local i=$1 port=$((REPLICA_PORT + $1 - 1))
    # One hop in front (this nginx), believed only with the secret it sends.
    MRTR_REPLICA_NAME="replica-$i" MRTR_REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0" MRTR_TRUSTED_PROXIES=1 \
        MRTR_PROXY_SECRET="$PROXY_SECRET" PORT="$port" bash scripts/production.sh &
    ROLE[$!]="replica-$i"
}

start_nginx() {
    "$NGINX" -p "$RUN_DIR" -c "$RUN_DIR/nginx.conf" &
    ROLE[$!]=nginx
}

# Stopping in order, so nothing in flight is cut: nginx first, gracefully (SIGQUIT: it stops accepting and
# finishes every request it holds, for up to STOP_GRACE seconds), then the replicas (granian stops its workers
# cleanly), then Redis (SIGTERM: it syncs its file and exits).
stop_role() {
    local pattern=$1 signal=$2 grace=$3 pid deadline
    for pid in "${!ROLE[@]}"; do
        [[ "${ROLE[$pid]}" == $pattern ]] && { kill "-$signal" "$pid" 2>/dev/null || true; }
    done
    deadline=$((SECONDS + grace))
    for pid in "${!ROLE[@]}"; do
        [[ "${ROLE[$pid]}" == $pattern ]] || continue
        while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        unset "ROLE[$pid]"
    done
}
stop() {
    trap - EXIT INT TERM
    set +e                              # a process already gone must not end the stop before the rest
    STOPPING=1
    stop_role nginx QUIT "$STOP_GRACE"
    stop_role 'replica-*' TERM 15
    stop_role redis TERM 15
    rm -rf "$RUN_DIR"
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
trap stop EXIT

say "Starting redis-server on 127.0.0.1:$REDIS_PORT (data in $DATA_DIR/redis)"
start_redis

servers=""
sticky=""
upstreams=""
for i in $(seq 1 "$REPLICAS"); do
    port=$((REPLICA_PORT + i - 1))
    say "Starting replica-$i on 127.0.0.1:$port"
    start_replica "$i"
    servers+="server 127.0.0.1:$port max_fails=1 fail_timeout=2s;"$'\n        '
    sticky+="~^replica-$i\\. replica_$i;"$'\n        '
    upstreams+="upstream replica_$i { server 127.0.0.1:$port; keepalive 8; }"$'\n    '
done

(umask 077; sed -e "s|@PREFIX@|$RUN_DIR|g" -e "s|@LOGS@|$DATA_DIR/logs|g" -e "s|@PORT@|$PORT|g" \
    -e "s|@LISTEN_HOST@|$LISTEN_HOST|g" -e "s|@MAX_BODY@|$MRTR_MAX_BODY|g" -e "s|@PROXY_SECRET@|$PROXY_SECRET|g" \
    deploy/nginx.conf \
    | .venv/bin/python -c '
import sys
text = sys.stdin.read()
markers = ("@SERVERS@", "@STICKY@", "@UPSTREAMS_ONE@", "@USER@", "@REAL_IP@", "@TRUSTED_GEO@")
for marker, value in zip(markers, sys.argv[1:]):
    text = text.replace(marker, value.rstrip())
sys.stdout.write(text)' "$servers" "$sticky" "$upstreams" "$user_line" "$real_ip" "$trusted_geo" \
    > "$RUN_DIR/nginx.conf")

# Wait until every replica answers, so nginx never turns the first visitors away.
for i in $(seq 1 "$REPLICAS"); do
    port=$((REPLICA_PORT + i - 1))
    for _ in $(seq 1 300); do
        if curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$port/" 2>/dev/null; then
            break
        fi
        for pid in "${!ROLE[@]}"; do
            kill -0 "$pid" 2>/dev/null || { echo "a process of the cluster exited during start-up" >&2; exit 1; }
        done
        sleep 0.1
    done
done

say "Starting nginx on http://$LISTEN_HOST:$PORT (logs in $DATA_DIR/logs)"
"$NGINX" -t -q -p "$RUN_DIR" -c "$RUN_DIR/nginx.conf"
start_nginx

say "MRTR Lab: http://$LISTEN_HOST:$PORT (replicas replica-1..replica-$REPLICAS, Redis on $REDIS_PORT); Ctrl-C stops it"
# A supervisor: whatever exits is started again while the rest serve (nginx skips a replica that is down, and a
# replica's own dead workers are respawned by granian). One that keeps dying (RESTART_LIMIT times within a minute)
# ends the cluster instead: a crash loop would look healthy to nobody.
set +e
while [ "$STOPPING" -eq 0 ]; do
    died=""
    wait -n -p died "${!ROLE[@]}"
    status=$?
    [ -n "$died" ] || continue      # a signal woke the wait: its trap decides
    role="${ROLE[$died]}"
    unset "ROLE[$died]"
    recent=""
    for t in ${RESTARTS[$role]:-}; do
        [ $((SECONDS - t)) -lt 60 ] && recent+="$t "
    done
    recent+="$SECONDS"
    RESTARTS[$role]="$recent"
    if [ "$(wc -w <<<"$recent")" -gt "$RESTART_LIMIT" ]; then
        echo "$role exited (status $status) $RESTART_LIMIT times within a minute; stopping the cluster" >&2
        exit 1
    fi
    echo "$role exited (status $status); starting it again" >&2
    case "$role" in
        redis) start_redis ;;
        nginx) start_nginx ;;
        replica-*) start_replica "${role#replica-}" ;;
    esac
done
