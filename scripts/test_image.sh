#!/usr/bin/env bash
# Builds the Dockerfile's image with podman, offline: no registry is contacted (the Debian 12 base
# is made from Debian's repository by debootstrap, the CUDA toolkit is the host's /usr/local/cuda
# mounted into the build). Then runs it as a deployment does, read-only as uid 10001 with its
# ports published on 127.0.0.1, and checks health (gRPC port and health-only port), a Morphology
# call, /metrics, `podman healthcheck run` and a SIGTERM that lets the calls in flight finish.
# The test command (scripts/test.sh) runs it after ctest.
#   scripts/test_image.sh   podman's storage and configuration live in build-image/
#                           ($CUIMG_IMAGE_DIR); the base and the build's layers are reused while
#                           they exist there: delete it to start over.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh image

state=$(realpath -m "${CUIMG_IMAGE_DIR:-build-image}")
# The toolkit nvcc belongs to, as nvcc itself reports it (TOP): the nvcc found on PATH may be a
# wrapper script elsewhere (CI's machines have /usr/local/bin/nvcc exec'ing the toolkit's), whose
# own directory is no toolkit.
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
top=$("$nvcc" -v __cuimg_toolkit_root 2>&1 | sed -n 's/^#\$ TOP=//p' | head -n 1 || true)
cuda=${CUIMG_CUDA_DIR:-$(realpath -m "${top:-$(dirname "$(dirname "$nvcc")")}")}
if [ ! -x "$cuda/bin/nvcc" ]; then
  echo "test_image: no CUDA toolkit at '$cuda' (nvcc not found); set CUIMG_CUDA_DIR" >&2
  exit 1
fi
mirror=${CUIMG_DEBIAN_MIRROR:-http://deb.debian.org/debian}
base=localhost/cuimg-base:bookworm
image=localhost/cuimg:test
name=cuimg-image-test-$$
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
started=$SECONDS
phase() { echo "test_image: [$((SECONDS - started))s] $*"; }

# Podman gets its own configuration and storage: /etc/containers and /var/lib/containers are
# neither read nor changed, so this runs the same on a fresh machine and on one with its own podman
# setup.
mkdir -p "$state/conf" "$state/smoke"
cat > "$state/conf/containers.conf" << EOF
[containers]
# Rootful podman asks for 1048576 files and processes; CI's machines cap them lower (files at
# 20000, processes below 40000) and their root lacks CAP_SYS_RESOURCE, so runc fails to start any
# container. These fit there and are plenty for a build and one server.
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
# runc: the runtime install_deps.sh installs. systemd is not PID 1 on CI's machines, so neither its
# cgroup manager nor journald (the default events log) is there.
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "$state/run/libpod"

[network]
network_config_dir = "$state/conf/cni"
EOF
cat > "$state/conf/storage.conf" << EOF
[storage]
driver = "overlay"
graphroot = "$state/storage"
runroot = "$state/run/storage"
EOF
podman() {
  $SUDO env CONTAINERS_CONF="$state/conf/containers.conf" \
    CONTAINERS_STORAGE_CONF="$state/conf/storage.conf" podman "$@"
}

fail() {
  echo "test_image: FAILED: $*" >&2
  echo "--- container log ---" >&2
  podman logs "$name" >&2 || true
  exit 1
}
cleanup() {
  podman rm -f -t 0 "$name" > /dev/null 2>&1 || true
  # Podman's overlay driver leaves its directory bind-mounted on itself; unmounted, build-image/
  # can simply be deleted (podman mounts it again when it next runs).
  $SUDO umount "$state/storage/overlay" 2> /dev/null || true
}
trap cleanup EXIT

if ! podman image exists "$base"; then
  phase "making the Debian 12 base ($mirror)"
  $SUDO rm -rf "$state/rootfs"
  if ! $SUDO debootstrap --variant=minbase bookworm "$state/rootfs" "$mirror" \
      > "$state/debootstrap.log" 2>&1; then
    tail -n 20 "$state/debootstrap.log" >&2
    echo "test_image: debootstrap failed (whole log: $state/debootstrap.log)" >&2
    exit 1
  fi
  $SUDO tar -C "$state/rootfs" -c . | podman import --quiet - "$base" > /dev/null
  $SUDO rm -rf "$state/rootfs"
fi

# The build stage compiles with a copy of this machine's compiler cache (filled by scripts/build.sh
# with the same compilers and relative paths): the image's build then takes minutes, not a
# second full build of CI's time. A copy, so that the build's root-owned writes stay here.
cache_mount=()
host_cache=$(ccache -k cache_dir 2> /dev/null || true)
if [ -n "$host_cache" ] && [ -d "$host_cache" ]; then
  $SUDO rm -rf "$state/ccache"
  cp -a "$host_cache" "$state/ccache"
  cache_mount=(-v "$state/ccache:/root/.cache/ccache")
  phase "compiler cache: a copy of $host_cache ($(du -sm "$state/ccache" | cut -f1) MB)"
fi

phase "building $image (log: $state/build.log)"
commit=$(git rev-parse --short=12 HEAD 2> /dev/null || true)
# --network=host: the build stage's apt-get reaches Debian's mirror without a bridge and NAT rules
# for the build containers. --format docker: the OCI format has no HEALTHCHECK.
if ! podman build --format docker --pull=never --network=host \
    -v "$cuda:/usr/local/cuda:ro" "${cache_mount[@]}" \
    --build-arg "BUILD_IMAGE=$base" --build-arg "RUNTIME_IMAGE=$base" \
    --build-arg "CUIMG_GIT_COMMIT=$commit" -t "$image" . > "$state/build.log" 2>&1; then
  tail -n 50 "$state/build.log" >&2
  echo "test_image: podman build failed (whole log: $state/build.log)" >&2
  exit 1
fi
size=$(podman image inspect --format '{{.Size}}' "$image")
phase "built: $((size / 1000000)) MB"

# Published on 127.0.0.1 only, on ports podman picks, so parallel runs and other servers on the
# machine cannot collide with it. The image's USER (10001) is not overridden.
# Podman schedules the image's periodic health checks with systemd timers and logs errors where
# systemd is not running (CI); `podman healthcheck run` below runs the check itself.
podman run -d --name "$name" --read-only \
  -p 127.0.0.1::50051 -p 127.0.0.1::50052 -p 127.0.0.1::9464 "$image" > /dev/null
port() { podman port "$name" "$1/tcp" | head -n 1 | sed 's/.*://'; }
grpc_port=$(port 50051)
health_port=$(port 50052)
metrics_port=$(port 9464)
[ "$(podman exec "$name" id -u)" = 10001 ] || fail "the server does not run as uid 10001"
if podman exec "$name" touch /opt/cuimg/x 2> /dev/null; then
  fail "the root filesystem is writable"
fi

# The client from the image, run here: the same binary the HEALTHCHECK uses, dialling the
# published ports from outside the container.
rm -rf "$state/smoke/cuimg"
podman cp "$name:/opt/cuimg" "$state/smoke/cuimg"
cuimg=$state/smoke/cuimg/bin/cuimg
client=("$cuimg" "--target=127.0.0.1:$grpc_port")

for _ in $(seq 60); do
  if "${client[@]}" --timeout=2 health > /dev/null 2>&1; then break; fi
  sleep 1
done
"${client[@]}" --timeout=5 health || fail "no health on the gRPC port"
"$cuimg" --target="127.0.0.1:$health_port" --timeout=5 health ||
  fail "no health on the health-only port"
phase "serving; health answers on 50051 and 50052"

input=tests/fuzz/corpus/image_decode/gray8.png
"${client[@]}" morphology --input="$input" --output="$state/smoke/dilated.png" \
  --steps=dilate:rect:3x3 || fail "Morphology call"
# PNG signature, then IHDR's width and height: the 10x12 input comes back 10x12.
header=$(od -An -tx1 -N24 "$state/smoke/dilated.png" | tr -d ' \n')
[ "$header" = 89504e470d0a1a0a0000000d494844520000000a0000000c ] ||
  fail "Morphology output is not a 10x12 PNG: $header"

metrics=$(curl -fsS --max-time 5 "http://127.0.0.1:$metrics_port/metrics") || fail "no /metrics"
echo "$metrics" | grep -q '^cuimg_requests_total{code="OK",rpc="Morphology"} 1$' ||
  fail "/metrics does not count the Morphology call"
phase "Morphology answered, /metrics counts it"

podman healthcheck run "$name" || fail "podman healthcheck run: unhealthy"
phase "podman healthcheck run: healthy"

# Two calls that take seconds on the CPU backend; SIGTERM once both are running. They must finish
# OK, and the server exit 0 after its drain.
"${client[@]}" load --requests=2 --concurrency=2 --warmup=0 --image_size=400x400 \
  --steps=dilate:ellipse:91x91 > "$state/smoke/drain.log" 2>&1 &
load_pid=$!
for _ in $(seq 100); do
  inflight=$(curl -fsS --max-time 5 "http://127.0.0.1:$metrics_port/metrics" |
    sed -n 's/^cuimg_inflight_requests{rpc="Morphology"} //p') || true
  [ "${inflight:-0}" = 2 ] && break
  sleep 0.1
done
[ "${inflight:-0}" = 2 ] || fail "the two slow calls never were in flight together"
podman stop -t 60 "$name" > /dev/null
if ! wait "$load_pid"; then
  cat "$state/smoke/drain.log" >&2
  fail "calls in flight at SIGTERM did not finish OK"
fi
[ "$(podman inspect --format '{{.State.ExitCode}}' "$name")" = 0 ] ||
  fail "the server did not exit 0 after SIGTERM"
log=$(podman logs "$name" 2>&1)
echo "$log" | grep -q 'event=shutdown signal=15' || fail "no event=shutdown signal=15 in the log"
echo "$log" | grep -q 'event=stopped' || fail "no event=stopped in the log"
phase "SIGTERM: both calls finished OK, exit 0"
echo "test_image: OK ($((SECONDS - started)) s)"
