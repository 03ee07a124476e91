#!/usr/bin/env bash
# Build the sandbox image without a registry: debootstrap a minimal Debian bookworm root filesystem, install numpy
# and CPU torch from wheels downloaded on the host, copy layersched.sim and the harness, add the sandbox user, and
# `docker import` it as layersched-sandbox:<hash of the inputs> (also tagged :latest).
#
# The image is rebuilt only when an input changes: this script, the debootstrap parameters, the wheels, the
# simulator's sources and data, or the harness. The debootstrap root and the wheels are cached in $CACHE.
#
# Env: LAYERSCHED_SANDBOX_CACHE (default /var/cache/layersched-sandbox), LAYERSCHED_DEBIAN_MIRROR
# (default http://deb.debian.org/debian), LAYERSCHED_TORCH_WHEEL (default: the torch 2.13.0+cpu cp311 wheel in
# /opt/wheels). Prints the image tag on its last line. Needs root (debootstrap) and a running engine
# (worker/sandbox/start_dockerd.sh).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
CACHE="${LAYERSCHED_SANDBOX_CACHE:-/var/cache/layersched-sandbox}"
MIRROR="${LAYERSCHED_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
TORCH_WHEEL="${LAYERSCHED_TORCH_WHEEL:-/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl}"
NUMPY_VERSION="2.4.6"
SUITE=bookworm
BASE_ARGS=(--variant=minbase --include=python3 "$SUITE")
REPO_NAME=layersched-sandbox
SITE=usr/local/lib/python3.11/dist-packages
PY="${PYTHON:-python3}"   # host Python 3.11: same bytecode magic as the image's 3.11.2, so .pyc files are valid
# The worker's modules that run inside the sandbox (the harness and what it imports); the Dockerfile copies the same.
# in worker/sandbox/:
SANDBOX_MODULES=(__init__.py harness.py isolation.py preload.py episode_process.py capture.py cache_guard.py wire.py protocol.py)

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9  # one build at a time (tests and benchmarks may race)

# ------------------------------------------------------------------ 1. base root filesystem (cached)
BASE="$CACHE/base-$SUITE-minbase"
if [ ! -f "$BASE/.layersched-base-ok" ]; then
    echo "debootstrap ${BASE_ARGS[*]} -> $BASE (about a minute)" >&2
    rm -rf "$BASE.tmp"
    debootstrap "${BASE_ARGS[@]}" "$BASE.tmp" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
        || { tail -n 20 "$CACHE/debootstrap.log" >&2; exit 1; }
    rm -rf "$BASE"
    mv "$BASE.tmp" "$BASE"
    echo "${BASE_ARGS[*]}" >"$BASE/.layersched-base-ok"
fi

# ------------------------------------------------------------------ 2. wheels (cached)
WHEELS="$CACHE/wheels"
mkdir -p "$WHEELS"
if [ ! -f "$WHEELS/.ok-$NUMPY_VERSION-$(basename "$TORCH_WHEEL")" ]; then
    echo "downloading wheels into $WHEELS" >&2
    "$PY" -m pip download --quiet --only-binary=:all: -d "$WHEELS" "$TORCH_WHEEL" "numpy==$NUMPY_VERSION" >&2
    touch "$WHEELS/.ok-$NUMPY_VERSION-$(basename "$TORCH_WHEEL")"
fi

# ------------------------------------------------------------------ 3. input hash
inputs_hash() {
    {
        echo "script"; sha256sum "$HERE/build_image.sh" | cut -d' ' -f1
        echo "base ${BASE_ARGS[*]} $(cat "$BASE/.layersched-base-ok")"
        (cd "$WHEELS" && sha256sum -- *.whl)
        (cd "$REPO" && find sim -type f \( -name '*.py' -o -name '*.c' -o -path 'sim/data/*' -o -path 'sim/tracks/*/data/*' \
            -o -name py.typed \) -not -path '*/__pycache__/*' | LC_ALL=C sort | xargs sha256sum)
        (cd "$REPO" && sha256sum worker/__init__.py "${SANDBOX_MODULES[@]/#/worker/sandbox/}")
    } | sha256sum | cut -c1-16
}
HASH="$(inputs_hash)"
TAG="$REPO_NAME:$HASH"
if docker image inspect "$TAG" >/dev/null 2>&1; then
    docker tag "$TAG" "$REPO_NAME:latest"
    echo "image $TAG is up to date" >&2
    echo "$TAG"
    exit 0
fi

# ------------------------------------------------------------------ 4. stage the root filesystem
STAGE="$CACHE/stage"
rm -rf "$STAGE"
cp -a "$BASE" "$STAGE"
rm -f "$STAGE/.layersched-base-ok"

echo "installing numpy and torch into the image" >&2
"$PY" -m pip install --quiet --no-index --find-links "$WHEELS" --no-warn-script-location \
    --target "$STAGE/$SITE" "$TORCH_WHEEL" "numpy==$NUMPY_VERSION" >&2
rm -rf "$STAGE/$SITE/bin"

# layersched: the simulator and the harness only (no sdk, server, docker SDK or celery), as a namespace package.
PKG="$STAGE/$SITE/layersched"
mkdir -p "$PKG/sim/data" "$PKG/sim/evalset" "$PKG/worker/sandbox"
# observe()'s C kernel (sim/tracks/layers_v1/_observe.c) travels as source only (the rules hash reads it); the sandbox
# runs observe()'s Python loop, which gives the same bits. The tracks' packages keep their layout (the harness imports
# a track by module name), with their own data (the lab's catalogs).
(cd "$REPO/sim" && cp -- *.py py.typed "$PKG/sim/" && cp -- data/* "$PKG/sim/data/" && cp -- evalset/*.py "$PKG/sim/evalset/" \
    && find tracks \( -name '*.py' -o -name '*.c' -o -path 'tracks/*/data/*' \) -type f -not -path '*/__pycache__/*' \
        -exec cp --parents -- {} "$PKG/sim/" \;)
cp "$REPO/worker/__init__.py" "$PKG/worker/"
cp "${SANDBOX_MODULES[@]/#/$REPO/worker/sandbox/}" "$PKG/worker/sandbox/"
"$PY" -m compileall -q "$PKG" >&2
# The rules hash of the simulator copied into the image (its default track's, as worker/sandbox/choice.py's
# image_rules), computed from those very files (-I: not the host's editable install). Workers compare it with their
# own before choosing this image.
RULES="$("$PY" -I -c "import sys; sys.path.insert(0, '$STAGE/$SITE')
from layersched.sim.tracks import DEFAULT_TRACK_ID, get_track; print(get_track(DEFAULT_TRACK_ID).rules_hash)")"

# What a sandbox never needs: docs, locales, apt state, torch's C++ headers, CMake files and test binaries.
rm -rf "$STAGE"/usr/share/{doc,man,info,locale,lintian}/* "$STAGE"/var/lib/apt/lists/* \
    "$STAGE"/var/cache/apt/* "$STAGE"/var/log/* "$STAGE/$SITE/torch/include" "$STAGE/$SITE/torch/share"
rm -rf "$STAGE/$SITE/torch/test"  # C++ test binaries
find "$STAGE/$SITE/torch/bin" -mindepth 1 -not -name torch_shm_manager -exec rm -rf {} +
find "$STAGE/$SITE" -type d \( -name tests -o -name testing \) -path '*/numpy/*' -prune -exec rm -rf {} +

# The sandbox user (uid 10001, no home, no shell) and the mount points.
echo "sandbox:x:10001:10001:layersched sandbox:/nonexistent:/usr/sbin/nologin" >>"$STAGE/etc/passwd"
echo "sandbox:x:10001:" >>"$STAGE/etc/group"
mkdir -p "$STAGE/bundle" "$STAGE/run/layersched"
chmod 0755 "$STAGE/bundle" "$STAGE/run/layersched"

# ------------------------------------------------------------------ 5. import
echo "docker import -> $TAG" >&2
tar --numeric-owner -C "$STAGE" -c . | docker import \
    --change 'USER 10001:10001' \
    --change 'WORKDIR /tmp' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1' \
    --change "LABEL layersched.sandbox.inputs=$HASH" \
    --change "LABEL layersched.rules=$RULES" \
    --change "LABEL layersched.sandbox.checkout=$REPO" \
    --change 'CMD ["python3", "-m", "layersched.worker.sandbox.harness", "--help"]' \
    - "$TAG" >&2
docker tag "$TAG" "$REPO_NAME:latest"
rm -rf "$STAGE"
# Each import is one ~0.9 GB layer that nothing shares: drop this checkout's superseded builds (those still used by
# a container are kept, since docker rmi refuses them). Another checkout's images are its own: two worktrees with
# different simulators build different images, and removing each other's would pull images from under tests.
for old in $(docker images "$REPO_NAME" --filter "label=layersched.sandbox.checkout=$REPO" --format '{{.Tag}}'); do
    if [ "$old" != latest ] && [ "$old" != "$HASH" ]; then
        docker rmi "$REPO_NAME:$old" >/dev/null 2>&1 && echo "removed superseded image $REPO_NAME:$old" >&2 || true
    fi
done
echo "$TAG"
