// `cuimg label`: the connected components of an image or volume (anything `cuimg morphology`
// reads), written as a U32 label image (--output: NIfTI, NRRD, .npy or TIFF) and a JSON table of
// the regions (--json_out), one row per label: voxels, half-open box and centroid in (x, y, z)
// index order, the centroid in millimetres when the input has spacing, and with --intensity that
// image's min, max, mean and sum per region.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/commands/commands.h"
#include "client/commands/stored_frames.h"
#include "client/io/atomic_output.h"
#include "client/io/volume_file.h"
#include "client/morphology_spec.h"
#include "client/pixel_messages.h"
#include "client/request_building.h"
#include "cuimg/v1/imaging_service.grpc.pb.h"
#include "proto/wire_contract.h"

namespace cuimg {
namespace {

int Usage(const std::string& message) {
  std::fprintf(stderr, "usage: %s\n", message.c_str());
  return kExitUsage;
}

// The request's parameters from the command (its input is set by the caller).
absl::StatusOr<v1::LabelRequest> LabelParameters(const LabelCommand& c) {
  v1::LabelRequest request;
  if (!c.connectivity.empty()) {
    absl::StatusOr<v1::Connectivity> connectivity = ParseConnectivity(c.connectivity);
    if (!connectivity.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--connectivity: ", connectivity.status().message()));
    }
    request.set_connectivity(*connectivity);
  }
  if (!c.threshold.empty()) {
    const std::vector<absl::string_view> parts = absl::StrSplit(c.threshold, ':');
    double lo = 0;
    double hi = 0;
    if (parts.size() != 2 || !absl::SimpleAtod(parts[0], &lo) || !absl::SimpleAtod(parts[1], &hi) ||
        std::isnan(lo) || std::isnan(hi)) {
      return absl::InvalidArgumentError("--threshold: expected LO:HI (two numbers)");
    }
    request.mutable_threshold()->set_lo(lo);
    request.mutable_threshold()->set_hi(hi);
  }
  if (c.min_voxels < 0) return absl::InvalidArgumentError("--min_voxels: must be >= 0");
  request.set_min_voxels(static_cast<std::uint64_t>(c.min_voxels));
  if (c.keep_resident) {
    request.mutable_output()->set_keep_resident(true);
    // Without --output the label image stays on the server only.
    request.mutable_output()->set_omit_data(c.output.empty());
  }
  return request;
}

// A double for JSON: NaN and infinities (an intensity sum over NaN) have no JSON number.
nlohmann::ordered_json Number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nullptr;
}

nlohmann::ordered_json Triple(const google::protobuf::RepeatedField<double>& column, int k) {
  return {Number(column[3 * k]), Number(column[3 * k + 1]), Number(column[3 * k + 2])};
}

// The regions as JSON rows, label order.
nlohmann::ordered_json RegionRows(const v1::RegionTable& t, int count) {
  const bool mm = t.centroid_mm_size() == 3 * count;
  const bool intensity = t.min_size() == count;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (int k = 0; k < count; ++k) {
    nlohmann::ordered_json row = {
        {"label", k + 1},
        {"voxels", t.voxels(k)},
        {"bbox_begin", {t.bbox_begin(3 * k), t.bbox_begin(3 * k + 1), t.bbox_begin(3 * k + 2)}},
        {"bbox_end", {t.bbox_end(3 * k), t.bbox_end(3 * k + 1), t.bbox_end(3 * k + 2)}},
        {"centroid", Triple(t.centroid(), k)}};
    if (mm) row["centroid_mm"] = Triple(t.centroid_mm(), k);
    if (intensity) {
      row["min"] = Number(t.min(k));
      row["max"] = Number(t.max(k));
      row["mean"] = Number(t.mean(k));
      row["sum"] = Number(t.sum(k));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// OK when every column has the length region_count implies (the server's contract).
absl::Status CheckTable(const v1::LabelResponse& response) {
  const int n = static_cast<int>(response.region_count());
  const v1::RegionTable& t = response.regions();
  const bool ok = t.voxels_size() == n && t.bbox_begin_size() == 3 * n &&
                  t.bbox_end_size() == 3 * n && t.centroid_size() == 3 * n &&
                  (t.centroid_mm_size() == 0 || t.centroid_mm_size() == 3 * n) &&
                  (t.min_size() == 0 || t.min_size() == n) && t.max_size() == t.min_size() &&
                  t.mean_size() == t.min_size() && t.sum_size() == t.min_size();
  if (ok) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("the server's region table does not have ", n, " rows in every column"));
}

}  // namespace

int RunLabel(const ConnectionOptions& connection, const LabelCommand& c) {
  if (c.input.empty() || (c.output.empty() && c.json_out.empty() && !c.keep_resident)) {
    return Usage(
        "cuimg label --input IN --output LABELS.nii.gz --json_out REGIONS.json "
        "[--connectivity 4|8|6|18|26] [--threshold LO:HI] [--min_voxels N] [--intensity FILE] "
        "[--keep_resident]");
  }
  absl::StatusOr<v1::LabelRequest> parameters = LabelParameters(c);
  if (!parameters.ok()) return Usage(std::string(parameters.status().message()));
  v1::LabelRequest request = *std::move(parameters);
  // A compressed DICOM series goes as its stored frames where the server decodes them
  // (stored_frames.h); a server that does not answer gets it decoded here, as before.
  VolumeReadOptions read_options{c.series_uid};
  if (IsDicomSeriesPath(c.input) && c.send_frames) {
    absl::StatusOr<v1::ServerInfo> info = FetchServerInfo(connection);
    if (info.ok()) read_options.frame_syntaxes = SendableSyntaxes(*info);
  }
  absl::StatusOr<VolumeFile> read = ReadVolumeFile(c.input, read_options);
  if (!read.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(read.status().message()).c_str());
    return ExitCodeForReadError(read.status());
  }
  const bool frames = read->dicom != nullptr && read->dicom->stored.has_value();
  if (!frames && read->image.channels() != 1) {
    return Usage("--input: label takes a one-channel image");
  }
  if (!c.intensity.empty()) {
    absl::StatusOr<VolumeFile> intensity = ReadVolumeFile(c.intensity, {c.series_uid});
    if (!intensity.ok()) {
      std::fprintf(stderr, "error: --intensity: %s\n",
                   std::string(intensity.status().message()).c_str());
      return ExitCodeForReadError(intensity.status());
    }
    ToProtoImage(intensity->image, request.mutable_intensity()->mutable_image());
  }
  // Shared with gRPC, which may hold the sent pixels past the call.
  const auto input = std::make_shared<const VolumeFile>(*std::move(read));
  const Image& image = input->image;
  const Extent extent = frames ? input->dicom->extent : image.extent();
  if (frames) {
    ToDicomFrames(*input->dicom->stored, *input->dicom, input->spacing,
                  request.mutable_input()->mutable_dicom_frames());
  } else {
    v1::Image* header = request.mutable_input()->mutable_image();
    ToProtoImageHeader(image, header);
    header->mutable_spacing()->set_x_mm(input->spacing.x_mm);
    header->mutable_spacing()->set_y_mm(input->spacing.y_mm);
    header->mutable_spacing()->set_z_mm(input->spacing.z_mm);
  }

  grpc::ClientContext context;
  PrepareContext(connection, &context);
  v1::LabelResponse response;
  Image::Storage labels;
  const auto start = std::chrono::steady_clock::now();
  // Frames (small) through the generated stub; pixels kept out of protobuf's copies.
  const grpc::Status status =
      frames ? v1::Imaging::NewStub(MakeChannel(connection))->Label(&context, request, &response)
             : UnaryCallWithPixels(MakeChannel(connection), &context,
                                   absl::StrCat("/", v1::Imaging::service_full_name(), "/Label"),
                                   request, image.bytes(), image.size_bytes(), input,
                                   c.output.empty() ? 0 : image.extent().Pixels() * 4, &response,
                                   &labels);
  const std::string& label_string = response.labels().image().data();
  const void* label_data = frames ? static_cast<const void*>(label_string.data()) : labels.data();
  const std::size_t label_bytes = frames ? label_string.size() : labels.size();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!status.ok()) {
    return frames ? ReportFramesRpcError(status, *input->dicom) : ReportRpcError(status);
  }
  if (absl::Status table = CheckTable(response); !table.ok()) {
    return ReportRpcError(grpc::Status(grpc::StatusCode::INTERNAL, std::string(table.message())));
  }
  const int count = static_cast<int>(response.region_count());
  if (!c.output.empty()) {
    const std::size_t expected = static_cast<std::size_t>(extent.Pixels()) * 4;
    if (label_bytes != expected) {
      std::fprintf(stderr, "error: the server returned %zu label bytes, expected %zu\n",
                   label_bytes, expected);
      return kExitRpcError;
    }
    VolumeWriteOptions options;
    options.nrrd_encoding = c.nrrd_gzip ? NrrdEncoding::kGzip : NrrdEncoding::kRaw;
    const ImageView view{PixelType::kU32, extent, 1, const_cast<void*>(label_data)};
    // The input's placement (NIfTI, NRRD), so that the labels overlay it.
    VolumeFile source;
    source.geometry = input->geometry;
    source.nifti = input->nifti;
    if (absl::Status s = WriteVolumeFile(c.output, view, input->spacing, source, options);
        !s.ok()) {
      std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
      return kExitUsage;
    }
  }
  const Extent& e = extent;
  nlohmann::ordered_json summary = {
      {"input", c.input},    {"output", c.output},
      {"width", e.width},    {"height", e.height},
      {"depth", e.depth},    {"region_count", count},
      {"round_trip_ms", ms}, {"server_timing", TimingTrailerText(context)}};
  if (!response.labels().handle().empty()) summary["handle"] = response.labels().handle();
  if (!c.json_out.empty()) {
    nlohmann::ordered_json table = summary;
    table["regions"] = RegionRows(response.regions(), count);
    // Whole or not at all (atomic_output.h), as every output the CLI writes.
    if (absl::Status s = WriteTextFile(c.json_out, table.dump(1) + "\n"); !s.ok()) {
      std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
      return kExitUsage;
    }
  }
  if (c.json) {
    std::printf("%s\n", summary.dump().c_str());
    return kExitOk;
  }
  std::printf("%d region%s in %s (%s) in %.2f ms; server: %s\n", count, count == 1 ? "" : "s",
              c.input.c_str(),
              e.depth > 1 ? absl::StrFormat("%dx%dx%d", e.width, e.height, e.depth).c_str()
                          : absl::StrFormat("%dx%d", e.width, e.height).c_str(),
              ms, TimingTrailerText(context).c_str());
  if (!response.labels().handle().empty()) {
    std::printf("labels kept resident: %s\n", response.labels().handle().c_str());
  }
  return kExitOk;
}

}  // namespace cuimg
