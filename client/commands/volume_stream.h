// Streams a volume through ProcessVolumeStream: the header, then slabs of whole slices, while the
// results are read on the calling thread (the server stops reading while its results go unread).
// Over several streams at once, each on its own connection, a volume's round trip is no longer
// bound by one HTTP/2 stream's throughput (about 1 GB/s).
#ifndef CUIMG_CLIENT_VOLUME_STREAM_H_
#define CUIMG_CLIENT_VOLUME_STREAM_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/connection.h"
#include "cuimg/common/image.h"
#include "cuimg/v1/imaging_service.grpc.pb.h"

namespace cuimg {

struct StreamedVolume {
  // One image per output plane, in the header's order: the Morphology result, or Gradient's gx,
  // gy, then magnitude and angle when asked.
  std::vector<Image> planes;
  // The `cuimg-timing` trailer of each stream, in z order.
  std::vector<std::string> stream_timings;
  // Per stream: 1, or 2 when it was sent again after failing UNAVAILABLE.
  std::vector<int> stream_attempts;
  // Per stream: the result slabs the server sent (of the attempt that succeeded).
  std::vector<int> stream_slabs;
  // Morphology with elements in millimetres: the elements as the server ran them (its first
  // response's resolved_elements); empty otherwise.
  std::vector<v1::StructuringElement> resolved_elements;
  // Every stream's trailer: the one stream's, or "stream K/N: trailer" joined by " | "; a stream
  // sent again is marked "(sent twice)". For machines (--json); people get summary().
  std::string server_timing() const;
  // One readable line: "<MB> MB at <MB/s> MB/s over N streams, S slabs[ (stream K sent twice)];
  // server: longest stream <ms> ms, slab stages summed <kernel> ms kernel + <copies> ms copies
  // (<x> slabs at once)". Each trailer sums its slabs' stages, which overlap in time (so one
  // stream's kernel_us may exceed its total_us); the line presents those sums as work done by
  // slabs running at once, beside the longest stream's wall time, never as parts of it.
  // `volume_bytes`: the input volume's size; `wall_ms`: the client's round trip.
  std::string summary(double wall_ms, std::size_t volume_bytes) const;
};

// The slices either side of an output slice whose input it depends on, for the header's operation
// (as the server's VolumeStreamZReach computes it from the validated request): for each erosion or
// dilation of the chain (OPEN, CLOSE, GRADIENT, TOP_HAT and BLACK_HAT count two, times their
// iterations), the element's larger z extent from its anchor, up to the chain's first global step
// (IsGlobalOp: from there the server holds the whole volume). 0 for Gradient and 2D elements.
// Not meaningful when an element is given in millimetres (HeaderHasRadius).
int HeaderZReach(const v1::VolumeStreamHeader& header);
// True when some Morphology element of `header` is given in millimetres.
bool HeaderHasRadius(const v1::VolumeStreamHeader& header);
// True when the header's Morphology chain has a global (segmentation) step (IsGlobalOp):
// the server then holds the whole volume, and any slice's result may depend on every other
// slice, so no halo makes a part of the volume equal the whole's.
bool HeaderHasGlobalStep(const v1::VolumeStreamHeader& header);

// Sends `volume` (one channel) with `header` (its operation set; the volume's shape is filled
// here) in slabs of `slab_slices` slices, the last one shorter when they do not divide the depth.
// With several channels (best each its own connection) the output's z range is split evenly among
// up to that many streams, run at once; each stream carries its range plus HeaderZReach slices
// either side where the volume has them, and keeps only its range's results, so the volume is
// exactly the one-stream result. Volumes of fewer than 4 slices take one stream, and so do chains
// with an element in millimetres (only the server turns those into voxels, so the halo is not
// known here; one stream needs none) and chains with a global step (HeaderHasGlobalStep).
// A stream that fails UNAVAILABLE is sent once more when its channel connects within a few
// seconds (and the deadline); a part rewrites all its slices, so the result is the same.
// The first failing stream's status (the others are then cancelled); INTERNAL when the results do
// not cover the volume exactly once.
absl::StatusOr<StreamedVolume> StreamVolume(
    const std::vector<std::shared_ptr<grpc::Channel>>& channels,
    const ConnectionOptions& connection, v1::VolumeStreamHeader header, const Image& volume,
    int slab_slices);

// `count` (>= 1) channels for StreamVolume, each its own connection.
std::vector<std::shared_ptr<grpc::Channel>> ConnectStreams(const ConnectionOptions& connection,
                                                           int count);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_VOLUME_STREAM_H_
