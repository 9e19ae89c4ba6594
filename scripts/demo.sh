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
# Pedestrians in vtest.avi (a street scene): every 100th frame over one DetectStream, boxes
# labelled by score in out/vtest_detections/frame_NNNNN.png and the run's detections in
# out/vtest_detections/detections.json.
rm -rf out/vtest_detections
"$client" --target="$target" detect --video="$data/vtest.avi" --every=100 --max_frames=8 \
  --output=out/vtest_detections > /dev/null
"$client" --target="$target" models
# A synthetic CT-like volume (balls of different densities in noise, 256x256x96 int16, a "lung" of
# air inside the body), closed with a 3D ball while it streams in 8-slice slabs over 4
# connections; written as multi-page TIFFs. Then segmented on the server: the body's mask
# (threshold, opening, the lung's hole filled, the largest component kept) and the dense balls
# labelled with their statistics.
/usr/bin/python3 - <<'PY'
import numpy as np
rng = np.random.default_rng(7)
z, y, x = np.mgrid[0:96, 0:256, 0:256]
volume = rng.normal(-900, 40, size=z.shape)
for cz, cy, cx, r, hu in ((48, 128, 128, 80, 40), (40, 100, 90, 22, 300), (60, 150, 170, 15, 900),
                          (48, 150, 80, 18, -850)):
    volume[(z - cz) ** 2 + (y - cy) ** 2 + (x - cx) ** 2 <= r * r] = hu
np.save("out/phantom_ct.npy", volume.astype(np.int16))
PY
# The input as a TIFF too, to compare (a 1x1x1 dilation is the identity).
"$client" --target="$target" morphology --input=out/phantom_ct.npy --output=out/phantom_ct.tif \
  --op=dilate --shape=rect --size=1x1x1
"$client" --target="$target" morphology --input=out/phantom_ct.npy \
  --output=out/phantom_ct_closed.tif --steps=close:ellipse:5x5x5 --slab_slices=8 --volume_streams=4
"$client" --target="$target" morphology --input=out/phantom_ct.npy \
  --output=out/phantom_ct_mask.nii.gz --steps=threshold:-200:3000,open:ball:3x3x3,fill_holes:6,keep_largest:26
"$client" --target="$target" label --input=out/phantom_ct.npy --output=out/phantom_ct_labels.nii.gz \
  --json_out=out/phantom_ct_regions.json --threshold=200:3000 --connectivity=26 \
  --intensity=out/phantom_ct.npy
"$client" mesh torus --n=301 --m=301 --output=out/torus.ply
"$client" --target="$target" deform --input=out/torus.ply --output=out/torus_twisted.ply --twist=90 --bulge=0.3
"$client" --target="$target" deform --input=out/torus.ply --animate=30 --twist=60
curl -s "http://127.0.0.1:$metrics/metrics" | grep '^cuimg_requests_total' > out/metrics.txt || true
echo "results in out/:"
ls -l out/*.png out/*.tiff out/*.tif out/*.nii.gz out/*.json out/*.ply out/vtest_detections/* |
  grep -v _pyramid_level
