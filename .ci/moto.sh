#!/usr/bin/env bash
# A local S3 server (moto) for tests/bucket.rs.
#
#   BLOOMLSM_S3_ENDPOINT=$(bash .ci/moto.sh start)   # prints http://127.0.0.1:PORT
#   bash .ci/moto.sh stop                             # kills the server by its PID
#
# `start` makes a virtualenv of its own (target/moto/venv, or under
# $BLOOMLSM_MOTO_DIR) holding the pinned packages below, starts moto_server on
# 127.0.0.1 on a free port, waits until it answers, writes the endpoint and
# the PID to files beside the virtualenv, makes the bucket the tests use
# (bloomlsm-test, or $BLOOMLSM_S3_BUCKET) and prints the endpoint on stdout.
# It fails, with the server's log, when the server does not start: it never
# skips.
set -euo pipefail
cd "$(dirname "$0")/.."

state=${BLOOMLSM_MOTO_DIR:-$PWD/target/moto}
venv=$state/venv
pins="moto[s3]==5.2.5 flask==3.1.3 flask-cors==6.0.5"

say() { echo "moto.sh: $*" >&2; }

start() {
    mkdir -p "$state"
    if [ -f "$state/pid" ] && kill -0 "$(cat "$state/pid")" 2>/dev/null; then
        say "a server started here already runs (PID $(cat "$state/pid")); stopping it"
        stop
    fi
    if [ "$(cat "$venv/pins" 2>/dev/null)" != "$pins" ]; then
        say "installing $pins into $venv"
        rm -rf "$venv"
        python3 -m venv "$venv" >&2
        # shellcheck disable=SC2086
        "$venv/bin/pip" install --quiet --disable-pip-version-check $pins >&2
        echo "$pins" > "$venv/pins"
    fi
    local port
    port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    local endpoint="http://127.0.0.1:$port"
    setsid "$venv/bin/moto_server" -H 127.0.0.1 -p "$port" > "$state/log" 2>&1 < /dev/null &
    local pid=$!
    echo "$pid" > "$state/pid"
    # Up to 60 s: the first start compiles moto's modules.
    if ! "$venv/bin/python" - "$endpoint" "$pid" <<'EOF'
import os, sys, time, urllib.request
endpoint, pid = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit("moto_server exited")
    try:
        urllib.request.urlopen(endpoint + "/moto-api/", timeout=2).read()
        sys.exit(0)
    except Exception:
        time.sleep(0.2)
sys.exit("moto_server did not answer within 60 s")
EOF
    then
        say "cannot start moto_server at $endpoint; its log:"
        cat "$state/log" >&2
        kill "$pid" 2>/dev/null || true
        rm -f "$state/pid"
        exit 1
    fi
    # moto (through its boto3) makes the bucket: S3 clients such as the
    # store's make objects, not buckets.
    if ! AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test "$venv/bin/python" -c '
import sys, boto3
boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1").create_bucket(Bucket=sys.argv[2])
' "$endpoint" "${BLOOMLSM_S3_BUCKET:-bloomlsm-test}" >&2; then
        say "cannot make the bucket at $endpoint"
        stop
        exit 1
    fi
    echo "$endpoint" > "$state/endpoint"
    say "moto_server $endpoint (PID $pid, log $state/log)"
    echo "$endpoint"
}

stop() {
    if [ ! -f "$state/pid" ]; then
        say "no server started from $state"
        return 0
    fi
    local pid
    pid=$(cat "$state/pid")
    if kill "$pid" 2>/dev/null; then
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
        say "stopped moto_server (PID $pid)"
    fi
    rm -f "$state/pid" "$state/endpoint"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    *)
        echo "usage: $0 start|stop" >&2
        exit 2
        ;;
esac
