#include "client/commands/stored_frames.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cuimg/codec/frame_encode.h"
#include "cuimg/v1/imaging_service.grpc.pb.h"
#include "proto/wire_contract.h"

namespace cuimg {

absl::StatusOr<v1::ServerInfo> FetchServerInfo(const ConnectionOptions& connection) {
  const std::unique_ptr<v1::Imaging::Stub> stub = v1::Imaging::NewStub(MakeChannel(connection));
  grpc::ClientContext context;
  PrepareContext(connection, &context);
  v1::ServerInfo info;
  const grpc::Status status = stub->GetServerInfo(&context, v1::GetServerInfoRequest(), &info);
  if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) return v1::ServerInfo();
  if (!status.ok()) return FromGrpcStatus(status);
  return info;
}

std::vector<std::string> SendableSyntaxes(const v1::ServerInfo& info) {
  std::vector<std::string> sendable;
  for (const std::string& uid : info.decodable_transfer_syntaxes()) {
    const absl::StatusOr<FrameSyntax> syntax = FrameSyntaxFromUid(uid, "");
    if (!syntax.ok()) continue;
    const bool htj2k = *syntax == FrameSyntax::kHtj2kLossless ||
                       *syntax == FrameSyntax::kHtj2kLosslessRpcl || *syntax == FrameSyntax::kHtj2k;
    if (IsLosslessSyntax(*syntax) || htj2k) sendable.push_back(uid);
  }
  return sendable;
}

void ToDicomFrames(const StoredFrames& stored, const DicomSeries& series,
                   const VoxelSpacing& spacing, v1::DicomFrames* out) {
  out->set_transfer_syntax_uid(stored.transfer_syntax_uid);
  v1::DicomPixelModule* module = out->mutable_pixel_module();
  module->set_rows(static_cast<std::uint32_t>(series.extent.height));
  module->set_columns(static_cast<std::uint32_t>(series.extent.width));
  module->set_samples_per_pixel(1);
  module->set_bits_allocated(static_cast<std::uint32_t>(stored.module.bits_allocated));
  module->set_bits_stored(static_cast<std::uint32_t>(stored.module.bits_stored));
  module->set_pixel_signed(stored.module.is_signed);
  module->set_photometric_interpretation(stored.monochrome1
                                             ? v1::PHOTOMETRIC_INTERPRETATION_MONOCHROME1
                                             : v1::PHOTOMETRIC_INTERPRETATION_MONOCHROME2);
  for (std::size_t z = 0; z < stored.data.size(); ++z) {
    v1::DicomFrame* frame = out->add_frames();
    frame->set_data(stored.data[z]);
    frame->set_rescale_slope(series.slopes[z]);
    frame->set_rescale_intercept(series.intercepts[z]);
  }
  out->mutable_spacing()->set_x_mm(spacing.x_mm);
  out->mutable_spacing()->set_y_mm(spacing.y_mm);
  out->mutable_spacing()->set_z_mm(spacing.z_mm);
}

int ReportFramesRpcError(const grpc::Status& status, const DicomSeries& series) {
  constexpr absl::string_view kPrefix = "input.dicom_frames.frames[";
  const std::optional<ErrorDetails> details = ParseErrorDetails(status);
  std::size_t index = 0;
  if (details.has_value() && details->reason == "CORRUPT_ENCODED_DATA") {
    absl::string_view field = details->field;
    if (absl::ConsumePrefix(&field, kPrefix) && absl::ConsumeSuffix(&field, "]") &&
        absl::SimpleAtoi(field, &index) && index < series.files.size()) {
      std::fprintf(stderr, "error: %s: PixelData: the server could not decode it: %s\n",
                   series.files[index].c_str(), status.error_message().c_str());
      return kExitBadData;
    }
  }
  return ReportRpcError(status);
}

absl::StatusOr<OutputSyntax> ParseOutputSyntax(const std::string& text) {
  if (text == "explicit") return OutputSyntax::kExplicit;
  if (text == "htj2k") return OutputSyntax::kHtj2k;
  if (text == "j2k") return OutputSyntax::kJ2k;
  return InvalidFieldError(
      ErrorReason::kUnknownEnumValue, "output_syntax",
      absl::StrCat("--output_syntax: '", text, "' is not one of htj2k, j2k, explicit"));
}

std::string OutputSyntaxUid(OutputSyntax syntax) {
  switch (syntax) {
    case OutputSyntax::kHtj2k:
      return std::string(FrameSyntaxUid(FrameSyntax::kHtj2kLossless));
    case OutputSyntax::kJ2k:
      return std::string(FrameSyntaxUid(FrameSyntax::kJ2kLossless));
    case OutputSyntax::kExplicit:
      break;
  }
  return "";
}

bool ServerEncodes(const v1::ServerInfo& info, OutputSyntax syntax) {
  if (syntax != OutputSyntax::kHtj2k) return false;
  const auto& uids = info.encodable_transfer_syntaxes();
  return std::find(uids.begin(), uids.end(), OutputSyntaxUid(syntax)) != uids.end();
}

absl::StatusOr<std::vector<std::string>> EncodeSlices(OutputSyntax syntax,
                                                      const ImageView& result) {
  if (syntax == OutputSyntax::kExplicit || result.type != PixelType::kI16 || result.channels != 1) {
    return absl::InvalidArgumentError("encoded slices need a one-channel i16 result");
  }
  const FrameSyntax frame_syntax =
      syntax == OutputSyntax::kHtj2k ? FrameSyntax::kHtj2kLossless : FrameSyntax::kJ2kLossless;
  const Extent slice{result.extent.width, result.extent.height, 1};
  const std::size_t slice_bytes = static_cast<std::size_t>(slice.Pixels()) * 2;
  std::vector<std::string> frames;
  for (std::int64_t z = 0; z < result.extent.depth; ++z) {
    const ImageView view{PixelType::kI16, slice, 1,
                         static_cast<std::uint8_t*>(result.data) + z * slice_bytes};
    absl::StatusOr<std::vector<std::uint8_t>> frame = EncodeLosslessFrame(frame_syntax, view);
    if (!frame.ok()) return frame.status();
    frames.emplace_back(frame->begin(), frame->end());
  }
  return frames;
}

}  // namespace cuimg
