// `cuimg gradient`: gx and gy as 32-bit float TIFF, and a PNG of the gradient magnitude to look
// at. Colour input is converted to gray first (Gradient works on one channel).
#include <chrono>
#include <cstdio>

#include "client/commands.h"
#include "client/image_convert.h"
#include "client/io/image_file.h"
#include "client/request_building.h"
#include "client/volume_stream.h"
#include "cuimg/v1/imaging_service.grpc.pb.h"

namespace cuimg {

int RunGradient(const ConnectionOptions& connection, const GradientCommand& c) {
  if (c.input.empty() || c.output_prefix.empty()) {
    std::fprintf(stderr, "usage: cuimg gradient --input IMAGE --output_prefix PREFIX "
                         "[--kernel_length 7] [--sigma 0]\n");
    return kExitUsage;
  }
  absl::StatusOr<Image> input = ReadImageFile(c.input);
  if (!input.ok()) {
    std::fprintf(stderr, "usage: %s\n", std::string(input.status().message()).c_str());
    return kExitUsage;
  }
  const Image gray = ToGray(*input);
  v1::GradientRequest request;
  request.set_kernel_length(static_cast<std::uint32_t>(c.kernel_length));
  request.set_sigma(c.sigma);
  request.set_magnitude(true);
  auto stub = v1::Imaging::NewStub(MakeChannel(connection));
  // gx, gy, magnitude: from one unary call, or streamed in slabs (--slab_slices).
  std::vector<Image> planes;
  std::string timing;
  const auto start = std::chrono::steady_clock::now();
  if (c.slab_slices > 0) {
    v1::VolumeStreamHeader header;
    *header.mutable_gradient() = request;
    absl::StatusOr<StreamedVolume> streamed =
        StreamVolume(*stub, connection, std::move(header), gray, c.slab_slices);
    if (!streamed.ok()) {
      return ReportRpcError(grpc::Status(static_cast<grpc::StatusCode>(streamed.status().code()),
                                         std::string(streamed.status().message())));
    }
    planes = std::move(streamed->planes);
    timing = streamed->server_timing;
  } else {
    ToProtoImage(gray, request.mutable_input()->mutable_image());
    grpc::ClientContext context;
    PrepareContext(connection, &context);
    v1::GradientResponse response;
    const grpc::Status status = stub->Gradient(&context, request, &response);
    if (!status.ok()) return ReportRpcError(status);
    for (const v1::ImageResult* result : {&response.gx(), &response.gy(), &response.magnitude()}) {
      absl::StatusOr<Image> image = FromProtoImage(result->image());
      if (!image.ok()) {
        return ReportRpcError(
            grpc::Status(grpc::StatusCode::INTERNAL, std::string(image.status().message())));
      }
      planes.push_back(*std::move(image));
    }
    timing = ServerTiming(context);
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const std::pair<const char*, const Image*> outputs[] = {{"_gx.tiff", &planes[0]},
                                                          {"_gy.tiff", &planes[1]}};
  for (const auto& [suffix, image] : outputs) {
    if (absl::Status s = WriteImageFile(c.output_prefix + suffix, image->view()); !s.ok()) {
      std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
      return kExitUsage;
    }
  }
  // PNG holds 2D images only: a volume's magnitude goes out as f32 TIFF pages instead.
  const bool volume = gray.extent().depth > 1;
  const std::string magnitude_file =
      c.output_prefix + (volume ? "_magnitude.tiff" : "_magnitude.png");
  if (absl::Status s = WriteImageFile(
          magnitude_file, volume ? planes[2].view() : ToPreviewU8(planes[2]).view());
      !s.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
    return kExitUsage;
  }
  std::printf("wrote %s_gx.tiff, %s_gy.tiff (f32) and %s (%lldx%lldx%lld%s) in "
              "%.2f ms; server: %s\n",
              c.output_prefix.c_str(), c.output_prefix.c_str(), magnitude_file.c_str(),
              static_cast<long long>(gray.extent().width), static_cast<long long>(gray.extent().height),
              static_cast<long long>(gray.extent().depth), c.slab_slices > 0 ? ", streamed" : "",
              ms, timing.c_str());
  return kExitOk;
}

}  // namespace cuimg
