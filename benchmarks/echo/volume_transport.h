// transport_bench's volume rows: a 512x512x300 i16 volume (157 MB) echoed in 1 MiB chunks on one
// stream vs dilated with a 9x9 disk through ProcessVolumeStream, by hand at each slab size and
// through the client library's StreamVolume over several connections; each streamed result is
// checked against the unary Morphology result byte for byte.
#ifndef CUIMG_BENCHMARKS_ECHO_VOLUME_TRANSPORT_H_
#define CUIMG_BENCHMARKS_ECHO_VOLUME_TRANSPORT_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cuimg/v1/imaging_service.grpc.pb.h"
#include "echo/echo.grpc.pb.h"

namespace cuimg::bench {

struct VolumeTransportRun {
  Echo::Stub* echo = nullptr;                   // the echo server
  cuimg::v1::Imaging::Stub* imaging = nullptr;  // the cuimg server
  std::string label;                            // names the transport settings in the rows
  int runs = 1;                                 // timed runs per row, after one warm-up (>= 1)
  std::vector<int> slab_sizes;                  // slices per slab, a row each
  std::vector<int> stream_counts;               // StreamVolume's streams, a row each
  // A channel to the cuimg server with a connection of its own per `index`.
  std::function<std::shared_ptr<grpc::Channel>(int index)> cuimg_channel;
};

// Measures and prints (Report) one JSON line per slab size and per stream count: medians of the
// runs, the server's stage times from the timing trailer, and the byte-for-byte check.
void MeasureVolumeTransport(const VolumeTransportRun& run);

}  // namespace cuimg::bench

#endif  // CUIMG_BENCHMARKS_ECHO_VOLUME_TRANSPORT_H_
