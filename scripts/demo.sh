#!/usr/bin/env bash
# The main job: sets up, starts cuimg-server (CUDA when a GPU is present, else the CPU backend),
# runs the cuimg client on sample images and writes the results to out/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
build_dir="${CUIMG_BUILD_DIR:-build}"
server="$build_dir/server/cuimg-server"
client="$build_dir/client/cuimg"
data=/usr/share/doc/opencv-doc/examples/data
mkdir -p out
port_file=$(mktemp)
rm -f "$port_file"
"$server" --listen_address=127.0.0.1:0 --metrics_address=127.0.0.1:0 --port_file="$port_file" \
  > out/server.log 2>&1 &
server_pid=$!
trap 'kill -TERM $server_pid 2>/dev/null; wait $server_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [ -s "$port_file" ] && break; sleep 0.1; done
[ -s "$port_file" ] || { cat out/server.log; echo "demo: server did not start" >&2; exit 1; }
port=$(sed -E 's/.*"grpc": ([0-9]+).*/\1/' "$port_file")
metrics=$(sed -E 's/.*"metrics": ([0-9]+).*/\1/' "$port_file")
target="127.0.0.1:$port"
grep -o 'event=startup.*backend=[a-z]*' out/server.log | sed 's/.*backend=/server backend: /'

"$client" --target="$target" health
"$client" --target="$target" morphology --input="$data/fruits.jpg" --output=out/fruits_dilate_disk9.png \
  --op=dilate --shape=ellipse --size=9x9
"$client" --target="$target" morphology --input="$data/basketball1.png" \
  --output=out/basketball1_gradient.png --op=gradient --shape=ellipse --size=5x5
"$client" --target="$target" morphology --input="$data/basketball1.png" \
  --output=out/basketball1_tophat.png --op=tophat --shape=rect --size=15x15
"$client" --target="$target" morphology --input="$data/basketball1.png" \
  --output=out/basketball1_open_close.png --steps=open:ellipse:7x7,close:ellipse:7x7
"$client" --target="$target" gradient --input="$data/basketball1.png" --output_prefix=out/basketball1
"$client" --target="$target" pyramid --input="$data/basketball1.png" --output_prefix=out/basketball1_pyramid \
  --levels=31
"$client" --target="$target" detect --input="$data/basketball1.png" \
  --output=out/basketball1_detections.png > out/basketball1_detections.json
"$client" --target="$target" models
"$client" mesh torus --n=301 --m=301 --output=out/torus.ply
"$client" --target="$target" deform --input=out/torus.ply --output=out/torus_twisted.ply --twist=90 --bulge=0.3
"$client" --target="$target" deform --input=out/torus.ply --animate=30 --twist=60
curl -s "http://127.0.0.1:$metrics/metrics" | grep '^cuimg_requests_total' > out/metrics.txt || true
echo "results in out/:"
ls -l out/*.png out/*.tiff out/*.ply out/*.json | grep -v _pyramid_level
