// `cuimg morphology`: reads an image or volume (PNG, JPEG, TIFF, .npy, NRRD, a DICOM series
// directory or DICOMweb series), sends it (each channel of a colour image separately: Morphology
// works on one channel, as OpenCV applies it per channel), writes the result in the format
// --output names (a DICOMweb service URL: through a folder, dicomweb_staging.h). A compressed DICOM
// series goes as its stored frames to a server that decodes them (stored_frames.h), and a derived
// series may be written as HTJ2K or JPEG 2000 (--output_syntax).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/commands/commands.h"
#include "client/commands/dicomweb_staging.h"
#include "client/commands/morphology_batch.h"
#include "client/commands/stored_frames.h"
#include "client/commands/volume_stream.h"
#include "client/io/image_file.h"
#include "client/io/volume_file.h"
#include "client/morphology_spec.h"
#include "client/pixel_messages.h"
#include "client/request_building.h"
#include "cuimg/v1/imaging_service.grpc.pb.h"
#include "proto/wire_contract.h"

namespace cuimg {
namespace {

using ElementList = std::vector<v1::StructuringElement>;

int Usage(const std::string& message) {
  std::fprintf(stderr, "usage: %s\n", message.c_str());
  return kExitUsage;
}

// Builds the chain from --steps, or one step from --op/--shape/--size/...
absl::StatusOr<std::vector<v1::MorphologyStep>> BuildSteps(const MorphologyCommand& c) {
  std::vector<v1::MorphologyStep> steps;
  if (!c.steps.empty()) {
    auto parsed = ParseSteps(c.steps);
    if (!parsed.ok()) return parsed.status();
    steps = *std::move(parsed);
  } else {
    auto step = ParseStep(c.op + ":" + c.shape + ":" + c.size + ":" + std::to_string(c.iterations));
    if (!step.ok()) return step.status();
    steps.push_back(*std::move(step));
  }
  for (v1::MorphologyStep& step : steps) {
    // --border, --anchor and --mask belong to the element; steps without one take none.
    if (!step.has_element()) continue;
    if (c.border == "constant") {
      step.set_border_mode(v1::BORDER_MODE_CONSTANT);
      step.set_border_value(c.border_value);
    } else if (c.border != "neutral") {
      return absl::InvalidArgumentError("--border: expected neutral or constant");
    }
    if (!c.anchor.empty()) {
      std::vector<int> a;
      for (absl::string_view part : absl::StrSplit(c.anchor, ',')) {
        int v = 0;
        if (!absl::SimpleAtoi(part, &v) || v < 0) {
          return absl::InvalidArgumentError("--anchor: expected x,y or x,y,z (non-negative)");
        }
        a.push_back(v);
      }
      if (a.size() < 2 || a.size() > 3) {
        return absl::InvalidArgumentError("--anchor: expected x,y or x,y,z");
      }
      step.mutable_element()->set_anchor_x(a[0]);
      step.mutable_element()->set_anchor_y(a[1]);
      if (a.size() == 3) step.mutable_element()->set_anchor_z(a[2]);
    }
    if (step.element().shape() == v1::ELEMENT_SHAPE_CUSTOM) {
      if (c.mask.empty()) return absl::InvalidArgumentError("shape custom needs --mask FILE.png");
      auto mask = ReadImageFile(c.mask);
      if (!mask.ok()) return AsReadError(mask.status());
      if (mask->type() != PixelType::kU8 || mask->channels() != 1) {
        return absl::InvalidArgumentError("--mask: expected an 8-bit gray PNG");
      }
      step.mutable_element()->set_width(static_cast<std::uint32_t>(mask->extent().width));
      step.mutable_element()->set_height(static_cast<std::uint32_t>(mask->extent().height));
      step.mutable_element()->set_depth(0);
      step.mutable_element()->set_mask(reinterpret_cast<const char*>(mask->bytes()),
                                       mask->size_bytes());
    }
  }
  return steps;
}

// Writes the result in the output path's format (a DICOM series derives from the input's).
// `frames` (a DICOM output): the slices as encoded frames of `frames_syntax`.
int WriteOutput(const MorphologyCommand& command, const ImageView& output, const VolumeFile& input,
                const std::string& frames_syntax = "", std::vector<std::string> frames = {}) {
  VolumeWriteOptions options;
  options.frames_syntax = frames_syntax;
  options.frames = std::move(frames);
  options.nrrd_encoding = command.nrrd_gzip ? NrrdEncoding::kGzip : NrrdEncoding::kRaw;
  options.uid_root = command.uid_root;
  options.derivation =
      "cuimg morphology " + (command.steps.empty()
                                 ? command.op + ":" + command.shape + ":" + command.size
                                 : command.steps);
  if (absl::Status s = WriteVolumeFile(command.output, output, input.spacing, input, options);
      !s.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
    return kExitUsage;
  }
  return kExitOk;
}

// Prints what was written, as text or JSON: `timing` is the server's trailer (every stream's for
// a streamed volume), `streamed` the streamed volume's readable summary (empty when unary),
// `elements` the elements the server ran when some were given in millimetres.
// `sent_bytes` >= 0: the request's size (a DICOM series sent as frames or pixels), reported.
void Report(const MorphologyCommand& command, PixelType type, const Extent& extent, int channels,
            double ms, const std::string& timing, const ElementList& elements,
            const std::string& streamed = "", std::int64_t sent_bytes = -1) {
  std::vector<std::string> described;
  for (const v1::StructuringElement& e : elements) described.push_back(DescribeElement(e));
  const std::string& output = command.output_label.empty() ? command.output : command.output_label;
  const Extent& e = extent;
  if (command.json) {
    std::printf(
        "{\"output\": \"%s\", \"width\": %lld, \"height\": %lld, \"depth\": %lld, "
        "\"channels\": %d, \"pixel_type\": \"%s\", \"slab_slices\": %d, "
        "\"round_trip_ms\": %.3f, \"server_timing\": \"%s\", \"sent_bytes\": %lld, "
        "\"resolved_elements\": [%s]}\n",
        output.c_str(), static_cast<long long>(e.width), static_cast<long long>(e.height),
        static_cast<long long>(e.depth), channels, std::string(PixelTypeName(type)).c_str(),
        command.slab_slices, ms, timing.c_str(), static_cast<long long>(sent_bytes),
        described.empty() ? "" : ("\"" + absl::StrJoin(described, "\", \"") + "\"").c_str());
  } else {
    const std::string size = e.depth > 1 ? absl::StrFormat("%dx%dx%d", e.width, e.height, e.depth)
                                         : absl::StrFormat("%dx%d", e.width, e.height);
    const std::string how = streamed.empty() ? "server: " + timing : "streamed " + streamed;
    std::printf("wrote %s (%s, %d channel%s, %s) in %.2f ms; %s\n", output.c_str(), size.c_str(),
                channels, channels == 1 ? "" : "s", std::string(PixelTypeName(type)).c_str(), ms,
                how.c_str());
    // The elements given in millimetres, as the server turned them into voxels.
    if (!described.empty()) {
      std::printf("elements in voxels: %s\n", absl::StrJoin(described, ", ").c_str());
    }
  }
}

// --slab_slices: the volume through ProcessVolumeStream.
int RunStreamed(const ConnectionOptions& connection, const MorphologyCommand& command,
                const std::vector<v1::MorphologyStep>& steps, const VolumeFile& input) {
  if (input.image.channels() != 1) return Usage("--slab_slices: needs a one-channel volume");
  v1::VolumeStreamHeader header;
  for (const v1::MorphologyStep& step : steps) *header.mutable_morphology()->add_steps() = step;
  // Elements in millimetres become voxels from it on the server.
  v1::Spacing* spacing = header.mutable_volume()->mutable_spacing();
  spacing->set_x_mm(input.spacing.x_mm);
  spacing->set_y_mm(input.spacing.y_mm);
  spacing->set_z_mm(input.spacing.z_mm);
  const auto streams = ConnectStreams(connection, command.volume_streams);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<StreamedVolume> result =
      StreamVolume(streams, connection, std::move(header), input.image, command.slab_slices);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!result.ok()) {
    return ReportRpcError(result.status());
  }
  if (int code = WriteOutput(command, result->planes[0].view(), input); code != kExitOk) {
    return code;
  }
  Report(command, input.image.type(), input.image.extent(), 1, ms, result->server_timing(),
         result->resolved_elements, result->summary(ms, input.image.size_bytes()));
  return kExitOk;
}

// One Morphology call per channel. A one-channel image (every CT volume) is sent from its own
// pixels and its result written from the buffer the response's pixels were read into
// (pixel_messages.h): for a 157 MB volume every copy costs tens of milliseconds. Colour images go
// a channel at a time.
// `marker` (may be null): the reconstruction steps' seed, sent with every call.
int RunUnary(const ConnectionOptions& connection, const MorphologyCommand& command,
             const std::vector<v1::MorphologyStep>& steps, VolumeFile* input, const Image* marker) {
  // Shared with gRPC, which may hold the sent pixels past the call.
  const auto in = std::make_shared<const Image>(std::move(input->image));
  const std::shared_ptr<grpc::Channel> channel = MakeChannel(connection);
  const std::string method = absl::StrCat("/", v1::Imaging::service_full_name(), "/Morphology");
  const int channels = in->channels();
  const std::size_t pixel = PixelSize(in->type());
  const std::int64_t pixels = in->extent().Pixels();
  Image output;
  if (channels > 1) output = Image(in->type(), in->extent(), channels, Image::kUninitialized);
  Image::Storage result;
  v1::MorphologyResponse response;
  std::string timing;
  ElementList elements;
  std::int64_t sent_bytes = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < channels; ++c) {
    std::shared_ptr<const Image> sent = in;
    if (channels > 1) {
      auto plane = std::make_shared<Image>(in->type(), in->extent(), 1, Image::kUninitialized);
      for (std::int64_t i = 0; i < pixels; ++i) {  // de-interleave one channel
        std::memcpy(plane->bytes() + i * pixel, in->bytes() + (i * channels + c) * pixel, pixel);
      }
      sent = std::move(plane);
    }
    v1::MorphologyRequest request;
    if (marker != nullptr) ToProtoImage(*marker, request.mutable_marker()->mutable_image());
    v1::Image* image = request.mutable_input()->mutable_image();
    ToProtoImageHeader(*sent, image);
    image->mutable_spacing()->set_x_mm(input->spacing.x_mm);
    image->mutable_spacing()->set_y_mm(input->spacing.y_mm);
    image->mutable_spacing()->set_z_mm(input->spacing.z_mm);
    for (const v1::MorphologyStep& step : steps) *request.add_steps() = step;
    sent_bytes += static_cast<std::int64_t>(request.ByteSizeLong() + sent->size_bytes());
    grpc::ClientContext context;
    PrepareContext(connection, &context);
    const grpc::Status status =
        UnaryCallWithPixels(channel, &context, method, request, sent->bytes(), sent->size_bytes(),
                            sent, sent->size_bytes(), &response, &result);
    if (!status.ok()) return ReportRpcError(status);
    if (result.size() != static_cast<std::size_t>(pixels * pixel)) {
      std::fprintf(stderr, "error: the server returned %zu bytes, expected %zu\n", result.size(),
                   static_cast<std::size_t>(pixels * pixel));
      return kExitRpcError;
    }
    if (channels > 1) {
      for (std::int64_t i = 0; i < pixels; ++i) {
        std::memcpy(output.bytes() + (i * channels + c) * pixel, &result[i * pixel], pixel);
      }
    }
    timing = TimingTrailerText(context);
    elements.assign(response.resolved_elements().begin(), response.resolved_elements().end());
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const ImageView written =
      channels > 1 ? output.view() : ImageView{in->type(), in->extent(), 1, result.data()};
  if (int code = WriteOutput(command, written, *input); code != kExitOk) return code;
  Report(command, in->type(), in->extent(), channels, ms, timing, elements, "", sent_bytes);
  return kExitOk;
}

// A DICOM series in one Morphology call: sent as its stored frames when it was kept so
// (input.dicom->stored: the server decodes them), else as pixels; the derived series written as
// `syntax` says, its frames encoded by the server when `info` says it can, else here.
int RunDicomUnary(const ConnectionOptions& connection, const MorphologyCommand& command,
                  const std::vector<v1::MorphologyStep>& steps, const VolumeFile& input,
                  const Image* marker, OutputSyntax syntax, const v1::ServerInfo& info) {
  const DicomSeries& series = *input.dicom;
  v1::MorphologyRequest request;
  if (marker != nullptr) ToProtoImage(*marker, request.mutable_marker()->mutable_image());
  if (series.stored.has_value()) {
    ToDicomFrames(*series.stored, series, input.spacing,
                  request.mutable_input()->mutable_dicom_frames());
  } else {
    v1::Image* image = request.mutable_input()->mutable_image();
    ToProtoImage(input.image, image);
    image->mutable_spacing()->set_x_mm(input.spacing.x_mm);
    image->mutable_spacing()->set_y_mm(input.spacing.y_mm);
    image->mutable_spacing()->set_z_mm(input.spacing.z_mm);
  }
  for (const v1::MorphologyStep& step : steps) *request.add_steps() = step;
  const bool server_encodes = ServerEncodes(info, syntax);
  if (server_encodes) {
    request.mutable_output()->set_frame_encoding(v1::FRAME_ENCODING_HTJ2K_LOSSLESS);
  }
  const auto stub = v1::Imaging::NewStub(MakeChannel(connection));
  grpc::ClientContext context;
  PrepareContext(connection, &context);
  v1::MorphologyResponse response;
  const auto start = std::chrono::steady_clock::now();
  const grpc::Status status = stub->Morphology(&context, request, &response);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!status.ok()) return ReportFramesRpcError(status, series);
  const v1::Image& header = response.result().image();
  const PixelType type = series.type;
  const std::size_t expected = static_cast<std::size_t>(series.extent.Pixels()) * PixelSize(type);
  ImageView written{type, series.extent, 1, nullptr};
  std::string frames_syntax;
  std::vector<std::string> frames;
  if (server_encodes) {
    const v1::DicomFrames& encoded = response.result().dicom_frames();
    if (encoded.frames_size() != series.extent.depth) {
      std::fprintf(stderr, "error: the server returned %d frames, expected %lld\n",
                   encoded.frames_size(), static_cast<long long>(series.extent.depth));
      return kExitRpcError;
    }
    // .201, or .202 should the server say its codestreams are RPCL-ordered.
    frames_syntax = encoded.transfer_syntax_uid();
    for (const v1::DicomFrame& frame : encoded.frames()) frames.push_back(frame.data());
  } else {
    if (header.data().size() != expected) {
      std::fprintf(stderr, "error: the server returned %zu bytes, expected %zu\n",
                   header.data().size(), expected);
      return kExitRpcError;
    }
    written.data = const_cast<char*>(header.data().data());
    if (syntax != OutputSyntax::kExplicit) {
      absl::StatusOr<std::vector<std::string>> encoded = EncodeSlices(syntax, written);
      if (!encoded.ok()) {
        std::fprintf(stderr, "error: --output_syntax: %s\n",
                     std::string(encoded.status().message()).c_str());
        return kExitUsage;
      }
      frames_syntax = OutputSyntaxUid(syntax);
      frames = *std::move(encoded);
    }
  }
  if (int code = WriteOutput(command, written, input, frames_syntax, std::move(frames));
      code != kExitOk) {
    return code;
  }
  const ElementList elements(response.resolved_elements().begin(),
                             response.resolved_elements().end());
  Report(command, type, series.extent, 1, ms, TimingTrailerText(context), elements, "",
         static_cast<std::int64_t>(request.ByteSizeLong()));
  return kExitOk;
}

int RunMorphologyOnFiles(const ConnectionOptions& connection, const MorphologyCommand& command) {
  if (command.input.empty() || command.output.empty()) {
    return Usage(
        "cuimg morphology --input IN.png --output OUT.png [--op ... --shape ... --size WxH | "
        "--steps CHAIN] [--marker MARKER]");
  }
  absl::StatusOr<std::vector<v1::MorphologyStep>> steps = BuildSteps(command);
  if (!steps.ok() && ExitCodeOf(steps.status()) != kExitUsage) {
    return ReportReadError(steps.status());  // the --mask file
  }
  if (!steps.ok()) return Usage(std::string(steps.status().message()));
  if (command.batch < 0) return Usage("--batch: images per call, >= 1 (0: one input file)");
  if (command.batch > 0) {
    if (command.slab_slices > 0) return Usage("--batch: not with --slab_slices");
    return RunMorphologyBatch(connection, command, *steps);
  }
  absl::StatusOr<OutputSyntax> syntax = ParseOutputSyntax(command.output_syntax);
  if (!syntax.ok()) return Usage(std::string(syntax.status().message()));
  const bool dicom_in = IsDicomSeriesPath(command.input) && command.slab_slices == 0;
  if (*syntax != OutputSyntax::kExplicit && (!dicom_in || !IsDicomSeriesPath(command.output))) {
    return Usage(
        "--output_syntax=" + command.output_syntax +
        ": needs a DICOM series input and output (a folder), sent unary (no --slab_slices)");
  }
  // A DICOM series goes as its stored frames where the server decodes them: it is asked once.
  // A server that does not answer gets the series decoded here, as before issue 49, and its
  // error comes from the Morphology call, after the input has been read (a bad file is still
  // exit 3 with no server).
  v1::ServerInfo info;
  if (dicom_in && (command.send_frames || *syntax != OutputSyntax::kExplicit)) {
    absl::StatusOr<v1::ServerInfo> fetched = FetchServerInfo(connection);
    if (fetched.ok()) info = *std::move(fetched);
  }
  VolumeReadOptions read_options{command.series_uid};
  if (command.send_frames) read_options.frame_syntaxes = SendableSyntaxes(info);
  absl::StatusOr<VolumeFile> input = ReadVolumeFile(command.input, read_options);
  if (!input.ok()) return ReportReadError(input.status());
  if (*syntax != OutputSyntax::kExplicit && input->dicom->type != PixelType::kI16) {
    return Usage("--output_syntax=" + command.output_syntax +
                 ": the series reads as float32 (a fractional RescaleSlope or Intercept); lossless "
                 "frames hold integers: use --output_syntax=explicit");
  }
  if (input->dicom != nullptr && input->dicom->gap_deviation_mm > 0.01 * input->spacing.z_mm) {
    std::fprintf(stderr,
                 "note: slice gaps vary by up to %.3f mm around %.3f mm; the volume is "
                 "processed in voxel units as if evenly spaced\n",
                 input->dicom->gap_deviation_mm, input->spacing.z_mm);
  }

  std::unique_ptr<VolumeFile> marker;
  if (!command.marker.empty()) {
    if (command.slab_slices > 0) {
      return Usage(
          "--marker: not with --slab_slices (a streamed volume's marker must be "
          "resident on the server; send the volume unary)");
    }
    absl::StatusOr<VolumeFile> read = ReadVolumeFile(command.marker, {command.series_uid});
    if (!read.ok()) {
      std::fprintf(stderr, "error: --marker: %s\n", std::string(read.status().message()).c_str());
      return ExitCodeForReadError(read.status());
    }
    marker = std::make_unique<VolumeFile>(*std::move(read));
  }

  if (command.slab_slices > 0) {
    if (command.volume_streams < 1) return Usage("--volume_streams: must be >= 1");
    return RunStreamed(connection, command, *steps, *input);
  }

  const Image* marker_image = marker == nullptr ? nullptr : &marker->image;
  if (input->dicom != nullptr &&
      (input->dicom->stored.has_value() || *syntax != OutputSyntax::kExplicit)) {
    return RunDicomUnary(connection, command, *steps, *input, marker_image, *syntax, info);
  }
  return RunUnary(connection, command, *steps, &*input, marker_image);
}

}  // namespace

int RunMorphology(const ConnectionOptions& connection, const MorphologyCommand& command) {
  return RunThroughDicomweb(command.dicomweb, command.input, command.output,
                            [&](const std::string& input, const std::string& output) {
                              MorphologyCommand local = command;
                              local.input = input;
                              local.output = output;
                              if (output != command.output) local.output_label = command.output;
                              return RunMorphologyOnFiles(connection, local);
                            });
}

}  // namespace cuimg
