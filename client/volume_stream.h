// Streams a volume through ProcessVolumeStream: the header, then slabs of whole slices, while the
// results are read on this thread (the server stops reading while its results go unread).
#ifndef CUIMG_CLIENT_VOLUME_STREAM_H_
#define CUIMG_CLIENT_VOLUME_STREAM_H_

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
  std::string server_timing;
};

// Sends `volume` (one channel) with `header` (its operation set; the volume's shape is filled
// here) in slabs of `slab_slices` slices, the last one shorter when they do not divide the depth.
// The RPC's status on failure; INTERNAL when the results do not cover the volume exactly once.
absl::StatusOr<StreamedVolume> StreamVolume(v1::Imaging::Stub& stub,
                                            const ConnectionOptions& connection,
                                            v1::VolumeStreamHeader header, const Image& volume,
                                            int slab_slices);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_VOLUME_STREAM_H_
