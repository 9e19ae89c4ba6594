#include "client/volume_stream.h"

#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/request_building.h"

namespace cuimg {

absl::StatusOr<StreamedVolume> StreamVolume(v1::Imaging::Stub& stub,
                                            const ConnectionOptions& connection,
                                            v1::VolumeStreamHeader header, const Image& volume,
                                            int slab_slices) {
  if (slab_slices < 1) return absl::InvalidArgumentError("--slab_slices: must be >= 1");
  if (volume.channels() != 1) {
    return absl::InvalidArgumentError("streamed volumes need one channel");
  }
  const Extent& e = volume.extent();
  v1::Image* shape = header.mutable_volume();
  shape->set_pixel_type(ToProtoPixelType(volume.type()));
  shape->set_width(static_cast<std::uint32_t>(e.width));
  shape->set_height(static_cast<std::uint32_t>(e.height));
  shape->set_depth(e.depth > 1 ? static_cast<std::uint32_t>(e.depth) : 0);
  StreamedVolume out;
  PixelType out_type = volume.type();
  int planes = 1;
  if (header.has_gradient()) {
    out_type = PixelType::kF32;
    planes = 2 + header.gradient().magnitude() + header.gradient().angle();
  }
  for (int p = 0; p < planes; ++p) out.planes.emplace_back(out_type, e, 1);
  const std::size_t in_slice = static_cast<std::size_t>(e.SlicePixels()) * PixelSize(volume.type());
  const std::size_t out_slice = static_cast<std::size_t>(e.SlicePixels()) * PixelSize(out_type);

  grpc::ClientContext context;
  PrepareContext(connection, &context);
  auto stream = stub.ProcessVolumeStream(&context);
  std::thread writer([&] {
    v1::VolumeStreamRequest message;
    *message.mutable_header() = header;
    bool ok = stream->Write(message);
    for (std::int64_t z = 0; ok && z < e.depth; z += slab_slices) {
      const std::int64_t n = std::min<std::int64_t>(slab_slices, e.depth - z);
      message.set_slab(reinterpret_cast<const char*>(volume.bytes()) + z * in_slice, n * in_slice);
      ok = stream->Write(message);
    }
    stream->WritesDone();
  });
  v1::VolumeStreamResponse response;
  std::int64_t next_z = 0;
  std::string problem;
  while (stream->Read(&response)) {
    const std::int64_t n = response.slices();
    if (response.z_begin() != next_z || n < 1 || next_z + n > e.depth ||
        response.data().size() != static_cast<std::size_t>(planes * n) * out_slice) {
      if (problem.empty()) {
        problem = absl::StrCat("the server sent slab z=", response.z_begin(), " (", n, " slices, ",
                               response.data().size(), " bytes) where slice ", next_z,
                               " was expected");
      }
      continue;
    }
    for (int p = 0; p < planes; ++p) {
      std::memcpy(out.planes[p].bytes() + next_z * out_slice,
                  response.data().data() + p * n * out_slice, n * out_slice);
    }
    next_z += n;
  }
  writer.join();
  const grpc::Status status = stream->Finish();
  out.server_timing = ServerTiming(context);
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  }
  if (!problem.empty()) return absl::InternalError(problem);
  if (next_z != e.depth) {
    return absl::InternalError(absl::StrCat("the server returned ", next_z, " of ", e.depth,
                                            " slices"));
  }
  return out;
}

}  // namespace cuimg
