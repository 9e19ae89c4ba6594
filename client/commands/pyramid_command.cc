// `cuimg pyramid`: every level as an image file (PNG previews, or TIFF for exact f32 values) and a
// contact sheet of all levels.
#include <chrono>
#include <cstdio>
#include <vector>

#include "absl/strings/str_format.h"
#include "client/commands/command_requests.h"
#include "client/commands/commands.h"
#include "client/image_convert.h"
#include "client/io/atomic_output.h"
#include "client/io/image_file.h"
#include "client/io/volume_file.h"
#include "client/request_building.h"
#include "cuimg/v1/imaging_service.grpc.pb.h"
#include "proto/wire_contract.h"

namespace cuimg {

int RunPyramid(const ConnectionOptions& connection, const PyramidCommand& c) {
  absl::StatusOr<v1::PyramidRequest> parameters = PyramidParameters(c);
  if (c.input.empty() || c.output_prefix.empty() || (c.format != "png" && c.format != "tiff") ||
      !parameters.ok()) {
    std::fprintf(stderr,
                 "usage: cuimg pyramid --input IMAGE --output_prefix PREFIX [--levels 31] "
                 "[--ratio 1.05] [--mode from_base|cascaded] [--format png|tiff]\n");
    return kExitUsage;
  }
  absl::StatusOr<Image> input = ReadImageFile(c.input);
  if (!input.ok()) return ReportReadError(input.status());
  const Image gray = ToGray(*input);
  v1::PyramidRequest request = *std::move(parameters);
  ToProtoImage(gray, request.mutable_input()->mutable_image());
  auto stub = v1::Imaging::NewStub(MakeChannel(connection));
  grpc::ClientContext context;
  PrepareContext(connection, &context);
  v1::PyramidResponse response;
  const auto start = std::chrono::steady_clock::now();
  const grpc::Status status = stub->Pyramid(&context, request, &response);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!status.ok()) return ReportRpcError(status);
  // Previews share the input's range so that levels compare.
  double lo = 0, hi = 255;
  if (gray.type() != PixelType::kU8) lo = hi = 0;
  std::vector<Image> previews;
  // Every level and the sheet, or none: written under temporary names, moved into place together.
  StagedOutputs staged;
  auto write = [&](const std::string& path, const ImageView& view) -> absl::Status {
    absl::StatusOr<std::string> temp = staged.Stage(path);
    if (!temp.ok()) return temp.status();
    return staged.Named(WriteImageFile(*temp, view));
  };
  for (const v1::PyramidLevel& level : response.levels()) {
    absl::StatusOr<Image> image = FromProtoImage(level.result().image());
    if (!image.ok()) {
      return ReportRpcError(
          grpc::Status(grpc::StatusCode::INTERNAL, std::string(image.status().message())));
    }
    previews.push_back(ToPreviewU8(*image, lo, hi));
    const std::string path =
        absl::StrFormat("%s_level%02d.%s", c.output_prefix, level.index(), c.format);
    const ImageView view = c.format == "tiff" ? image->view() : previews.back().view();
    if (absl::Status s = write(path, view); !s.ok()) {
      std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
      return kExitUsage;
    }
  }
  const Image sheet = ContactSheet(previews, std::max<std::int64_t>(gray.extent().width * 2, 800));
  if (absl::Status s = write(c.output_prefix + "_contact_sheet.png", sheet.view());
      !s.ok() || !(s = staged.Commit()).ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
    return kExitUsage;
  }
  std::printf("wrote %d levels (%s_levelNN.%s) and %s_contact_sheet.png in %.2f ms; server: %s\n",
              response.levels_size(), c.output_prefix.c_str(), c.format.c_str(),
              c.output_prefix.c_str(), ms, TimingTrailerText(context).c_str());
  return kExitOk;
}

}  // namespace cuimg
