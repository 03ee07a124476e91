#!/usr/bin/env bash
# Start the Docker engine if it is not answering yet (idempotent).
#
# These machines have Debian's docker.io but nothing starts dockerd. Sandboxes run with --network none, so the
# engine does not need bridge networking: when the bridge/iptables setup fails (no netfilter in a nested VM, for
# example) we restart it with --bridge=none --iptables=false.
#
# Env: LAYERSCHED_DOCKERD_LOG (default /var/log/layersched-dockerd.log), LAYERSCHED_DOCKERD_WAIT seconds (default 60).
set -euo pipefail

LOG="${LAYERSCHED_DOCKERD_LOG:-/var/log/layersched-dockerd.log}"
WAIT="${LAYERSCHED_DOCKERD_WAIT:-60}"

if docker info >/dev/null 2>&1; then
    exit 0
fi

if [ "$(id -u)" != 0 ]; then
    echo "start_dockerd.sh: docker info fails and we are not root; start the engine as root" >&2
    exit 1
fi

wait_for_engine() {  # $1 = pid of dockerd
    local deadline=$((SECONDS + WAIT))
    while [ $SECONDS -lt $deadline ]; do
        if docker info >/dev/null 2>&1; then
            return 0
        fi
        if ! kill -0 "$1" 2>/dev/null; then
            return 1  # dockerd exited: typically the bridge could not be created
        fi
        sleep 0.5
    done
    return 1
}

start() {
    echo "=== $(date -Is) dockerd $*" >>"$LOG"
    nohup /usr/sbin/dockerd "$@" >>"$LOG" 2>&1 </dev/null &
    echo $!
}

pid=$(start)
if wait_for_engine "$pid"; then
    echo "dockerd running (pid $pid, normal networking, log $LOG)"
    exit 0
fi
kill "$pid" 2>/dev/null || true
# Wait for it to release its pid file and socket before the second attempt.
for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
rm -f /var/run/docker.pid

pid=$(start --bridge=none --iptables=false --ip6tables=false)
if wait_for_engine "$pid"; then
    echo "dockerd running (pid $pid, --bridge=none --iptables=false, log $LOG)"
    exit 0
fi
echo "start_dockerd.sh: dockerd did not answer within ${WAIT}s; see $LOG:" >&2
tail -n 20 "$LOG" >&2
exit 1
