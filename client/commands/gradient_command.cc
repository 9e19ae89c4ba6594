// `cuimg gradient`: gx and gy as 32-bit float files (TIFF, .npy, NRRD or NIfTI by --format), and
// the gradient magnitude: a PNG to look at for 2D input, f32 in the same format for volumes (which
// the server processes slice by slice). Colour input is converted to gray first (Gradient works
// on one channel). Input: anything `cuimg morphology` reads, DICOM series included.
#include <chrono>
#include <cstdio>

#include "absl/strings/str_format.h"
#include "client/commands/command_requests.h"
#include "client/commands/commands.h"
#include "client/commands/stored_frames.h"
#include "client/commands/volume_stream.h"
#include "client/image_convert.h"
#include "client/io/atomic_output.h"
#include "client/io/volume_file.h"
#include "client/request_building.h"
#include "cuimg/v1/imaging_service.grpc.pb.h"
#include "proto/wire_contract.h"

namespace cuimg {
namespace {

int WriteError(const absl::Status& s) {
  std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
  return kExitUsage;
}

int BadResponse(const absl::Status& s) {
  return ReportRpcError(grpc::Status(grpc::StatusCode::INTERNAL, std::string(s.message())));
}

}  // namespace

int RunGradient(const ConnectionOptions& connection, const GradientCommand& c) {
  if (c.input.empty() || c.output_prefix.empty()) {
    std::fprintf(stderr,
                 "usage: cuimg gradient --input IMAGE --output_prefix PREFIX "
                 "[--format tiff|npy|nrrd|nii|nii.gz] [--kernel_length 7] [--sigma 0] "
                 "[--slab_slices N [--volume_streams 4]]\n");
    return kExitUsage;
  }
  if (c.slab_slices > 0 && c.volume_streams < 1) {
    std::fprintf(stderr, "usage: --volume_streams: must be >= 1\n");
    return kExitUsage;
  }
  if (c.format != "tiff" && c.format != "npy" && c.format != "nrrd" && c.format != "nii" &&
      c.format != "nii.gz") {
    std::fprintf(stderr, "usage: --format: expected tiff, npy, nrrd, nii or nii.gz\n");
    return kExitUsage;
  }
  // A compressed DICOM series sent unary goes as its stored frames where the server decodes
  // them (stored_frames.h); a server that does not answer gets it decoded here, as before.
  VolumeReadOptions read_options{c.series_uid};
  if (c.slab_slices == 0 && c.send_frames && IsDicomSeriesPath(c.input)) {
    absl::StatusOr<v1::ServerInfo> info = FetchServerInfo(connection);
    if (info.ok()) read_options.frame_syntaxes = SendableSyntaxes(*info);
  }
  absl::StatusOr<VolumeFile> input = ReadVolumeFile(c.input, read_options);
  if (!input.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(input.status().message()).c_str());
    return ExitCodeForReadError(input.status());
  }
  const bool frames = input->dicom != nullptr && input->dicom->stored.has_value();
  const Image gray = frames ? Image() : ToGray(input->image);
  const Extent extent = frames ? input->dicom->extent : gray.extent();
  const bool volume = extent.depth > 1;
  v1::GradientRequest request = GradientParameters(c);
  // gx, gy, magnitude: from one unary call, or streamed in slabs (--slab_slices).
  std::vector<Image> planes;
  std::string timing;
  const auto start = std::chrono::steady_clock::now();
  if (c.slab_slices > 0) {
    v1::VolumeStreamHeader header;
    *header.mutable_gradient() = request;
    absl::StatusOr<StreamedVolume> streamed =
        StreamVolume(ConnectStreams(connection, c.volume_streams), connection, std::move(header),
                     gray, c.slab_slices);
    if (!streamed.ok()) {
      return ReportRpcError(streamed.status());
    }
    planes = std::move(streamed->planes);
    // One readable line: the per-stream trailers sum overlapping slabs (summary() says how).
    timing = "streamed " + streamed->summary(std::chrono::duration<double, std::milli>(
                                                 std::chrono::steady_clock::now() - start)
                                                 .count(),
                                             gray.size_bytes());
  } else {
    if (frames) {
      ToDicomFrames(*input->dicom->stored, *input->dicom, input->spacing,
                    request.mutable_input()->mutable_dicom_frames());
    } else {
      v1::Image* image = request.mutable_input()->mutable_image();
      ToProtoImage(gray, image);
      image->mutable_spacing()->set_x_mm(input->spacing.x_mm);
      image->mutable_spacing()->set_y_mm(input->spacing.y_mm);
      image->mutable_spacing()->set_z_mm(input->spacing.z_mm);
    }
    grpc::ClientContext context;
    PrepareContext(connection, &context);
    v1::GradientResponse response;
    const grpc::Status status =
        v1::Imaging::NewStub(MakeChannel(connection))->Gradient(&context, request, &response);
    if (!status.ok()) {
      return frames ? ReportFramesRpcError(status, *input->dicom) : ReportRpcError(status);
    }
    for (const v1::ImageResult* result : {&response.gx(), &response.gy(), &response.magnitude()}) {
      absl::StatusOr<Image> out = FromProtoImage(result->image());
      if (!out.ok()) return BadResponse(out.status());
      planes.push_back(*std::move(out));
    }
    timing = "server: " + TimingTrailerText(context);
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (planes.size() < 3) return BadResponse(absl::InternalError("missing gradient outputs"));

  VolumeWriteOptions options;
  options.nrrd_encoding = c.nrrd_gzip ? NrrdEncoding::kGzip : NrrdEncoding::kRaw;
  const std::string ext = "." + c.format;
  std::vector<std::pair<std::string, const Image*>> outputs = {{"_gx" + ext, &planes[0]},
                                                               {"_gy" + ext, &planes[1]}};
  if (volume) outputs.push_back({"_magnitude" + ext, &planes[2]});
  // All the outputs or none: each is written under a temporary name, and they move into place
  // together once all are written.
  StagedOutputs staged;
  for (const auto& [suffix, out] : outputs) {
    absl::StatusOr<std::string> temp = staged.Stage(c.output_prefix + suffix);
    if (!temp.ok()) return WriteError(temp.status());
    // The input is the placement's source, as for morphology: spacing, patient geometry, NIfTI
    // transforms and units.
    if (absl::Status s = WriteVolumeFile(*temp, out->view(), input->spacing, *input, options);
        !s.ok()) {
      return WriteError(staged.Named(s));
    }
  }
  if (!volume) {
    absl::StatusOr<std::string> temp = staged.Stage(c.output_prefix + "_magnitude.png");
    if (!temp.ok()) return WriteError(temp.status());
    if (absl::Status s =
            WriteVolumeFile(*temp, ToPreviewU8(planes[2]).view(), {}, VolumeFile{}, options);
        !s.ok()) {
      return WriteError(staged.Named(s));
    }
  }
  if (absl::Status s = staged.Commit(); !s.ok()) return WriteError(s);
  const Extent& e = extent;
  const std::string size = volume ? absl::StrFormat("%dx%dx%d", e.width, e.height, e.depth)
                                  : absl::StrFormat("%dx%d", e.width, e.height);
  std::printf("wrote %s_gx%s, %s_gy%s (f32) and %s_magnitude%s (%s) in %.2f ms; %s\n",
              c.output_prefix.c_str(), ext.c_str(), c.output_prefix.c_str(), ext.c_str(),
              c.output_prefix.c_str(), volume ? ext.c_str() : ".png", size.c_str(), ms,
              timing.c_str());
  return kExitOk;
}

}  // namespace cuimg
