// `cuimg gradient`: gx and gy as 32-bit float TIFF, and a PNG of the gradient magnitude to look
// at. Colour input is converted to gray first (Gradient works on one channel).
#include <chrono>
#include <cstdio>

#include "client/commands.h"
#include "client/image_convert.h"
#include "client/io/image_file.h"
#include "client/request_building.h"
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
  ToProtoImage(gray, request.mutable_input()->mutable_image());
  request.set_kernel_length(static_cast<std::uint32_t>(c.kernel_length));
  request.set_sigma(c.sigma);
  request.set_magnitude(true);
  auto stub = v1::Imaging::NewStub(MakeChannel(connection));
  grpc::ClientContext context;
  PrepareContext(connection, &context);
  v1::GradientResponse response;
  const auto start = std::chrono::steady_clock::now();
  const grpc::Status status = stub->Gradient(&context, request, &response);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!status.ok()) return ReportRpcError(status);
  const std::pair<const char*, const v1::ImageResult*> outputs[] = {
      {"_gx.tiff", &response.gx()}, {"_gy.tiff", &response.gy()}};
  for (const auto& [suffix, result] : outputs) {
    absl::StatusOr<Image> image = FromProtoImage(result->image());
    if (!image.ok()) return ReportRpcError(grpc::Status(grpc::StatusCode::INTERNAL, std::string(image.status().message())));
    if (absl::Status s = WriteImageFile(c.output_prefix + suffix, image->view()); !s.ok()) {
      std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
      return kExitUsage;
    }
  }
  absl::StatusOr<Image> magnitude = FromProtoImage(response.magnitude().image());
  if (!magnitude.ok()) return ReportRpcError(grpc::Status(grpc::StatusCode::INTERNAL, std::string(magnitude.status().message())));
  if (absl::Status s = WriteImageFile(c.output_prefix + "_magnitude.png", ToPreviewU8(*magnitude).view());
      !s.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
    return kExitUsage;
  }
  std::printf("wrote %s_gx.tiff, %s_gy.tiff (f32) and %s_magnitude.png (%lldx%lld, %zu taps) in "
              "%.2f ms; server: %s\n",
              c.output_prefix.c_str(), c.output_prefix.c_str(), c.output_prefix.c_str(),
              static_cast<long long>(gray.extent().width), static_cast<long long>(gray.extent().height),
              static_cast<std::size_t>(response.smoothing_taps_size()), ms,
              ServerTiming(context).c_str());
  return kExitOk;
}

}  // namespace cuimg
