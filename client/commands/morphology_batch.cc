// `cuimg morphology --batch=N --input=DIR --output=DIR`: every image file of a folder (PNG,
// JPEG, TIFF, .npy, NRRD; not recursing) through Morphology, N images to a call (a batch, the
// API's `inputs`), each channel of a colour image an image of its own (Morphology works on one
// channel, as OpenCV applies it per channel). Each result is written to the output folder under
// its input's file name, in the format the name says. A file the server refuses is reported and
// not written; the others are.
#include "client/commands/morphology_batch.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/commands/commands.h"
#include "client/connection.h"
#include "client/io/image_file.h"
#include "client/io/volume_file.h"
#include "client/request_building.h"
#include "cuimg/v1/imaging_service.grpc.pb.h"
#include "proto/wire_contract.h"

namespace cuimg {
namespace {

// One file read: its pixels (and spacing), and where its channels' images go in the call.
struct BatchFile {
  std::string path;
  VolumeFile volume;
  int first = 0;  // the call's entry holding its first channel
};

// Channel `c` of a colour image as a one-channel image.
Image ChannelOf(const Image& image, int c) {
  const int channels = image.channels();
  const std::size_t pixel = PixelSize(image.type());
  Image plane(image.type(), image.extent(), 1, Image::kUninitialized);
  for (std::int64_t i = 0; i < image.extent().Pixels(); ++i) {
    std::memcpy(plane.bytes() + i * pixel, image.bytes() + (i * channels + c) * pixel, pixel);
  }
  return plane;
}

// Writes `file`'s result from its channels' entries of `response`, or says why not (an entry's
// error, naming the file). Returns whether it was written.
bool WriteResult(const MorphologyCommand& command, const BatchFile& file,
                 const v1::MorphologyResponse& response) {
  const Image& in = file.volume.image;
  const int channels = in.channels();
  const std::size_t pixel = PixelSize(in.type());
  Image out(in.type(), in.extent(), channels, Image::kUninitialized);
  for (int c = 0; c < channels; ++c) {
    const v1::MorphologyBatchResult& entry = response.results(file.first + c);
    if (entry.status().code() != 0) {
      std::fprintf(stderr, "error: %s: %s: %s\n", file.path.c_str(),
                   StatusCodeName(static_cast<grpc::StatusCode>(entry.status().code())).c_str(),
                   entry.status().message().c_str());
      return false;
    }
    const std::string& data = entry.response().result().image().data();
    if (data.size() != static_cast<std::size_t>(in.extent().Pixels()) * pixel) {
      std::fprintf(stderr, "error: %s: the server returned %zu bytes, expected %zu\n",
                   file.path.c_str(), data.size(),
                   static_cast<std::size_t>(in.extent().Pixels()) * pixel);
      return false;
    }
    for (std::int64_t i = 0; i < in.extent().Pixels(); ++i) {
      std::memcpy(out.bytes() + (i * channels + c) * pixel, data.data() + i * pixel, pixel);
    }
  }
  VolumeWriteOptions options;
  options.nrrd_encoding = command.nrrd_gzip ? NrrdEncoding::kGzip : NrrdEncoding::kRaw;
  const std::string path =
      (std::filesystem::path(command.output) / std::filesystem::path(file.path).filename())
          .string();
  if (absl::Status s = WriteVolumeFile(path, out.view(), file.volume.spacing, file.volume, options);
      !s.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
    return false;
  }
  return true;
}

}  // namespace

int RunMorphologyBatch(const ConnectionOptions& connection, const MorphologyCommand& command,
                       const std::vector<v1::MorphologyStep>& steps) {
  absl::StatusOr<std::vector<std::string>> paths = ImageFilesIn(command.input, "--input");
  if (!paths.ok() || paths->empty()) {
    std::fprintf(stderr, "usage: --batch: --input must be a folder of image files (%s)\n",
                 paths.ok() ? "none found" : std::string(paths.status().message()).c_str());
    return kExitUsage;
  }
  std::error_code error;
  std::filesystem::create_directories(command.output, error);
  if (error || !std::filesystem::is_directory(command.output)) {
    std::fprintf(stderr, "usage: --batch: --output must be a folder (%s)\n",
                 error ? error.message().c_str() : "not a folder");
    return kExitUsage;
  }
  auto stub = v1::Imaging::NewStub(MakeChannel(connection));
  int written = 0, failed = 0, calls = 0, images = 0;
  std::string timing;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t next = 0; next < paths->size();) {
    // Whole files to a call, up to --batch images (at least one file).
    v1::MorphologyRequest request;
    for (const v1::MorphologyStep& step : steps) *request.add_steps() = step;
    std::vector<BatchFile> files;
    while (next < paths->size()) {
      BatchFile file{(*paths)[next], {}, request.inputs_size()};
      absl::StatusOr<VolumeFile> volume = ReadVolumeFile(file.path);
      if (!volume.ok()) {
        std::fprintf(stderr, "error: %s\n", std::string(volume.status().message()).c_str());
        return ExitCodeForReadError(volume.status());
      }
      const int channels = volume->image.channels();
      if (!files.empty() && request.inputs_size() + channels > command.batch) break;
      ++next;
      file.volume = *std::move(volume);
      for (int c = 0; c < channels; ++c) {
        v1::Image* image = request.add_inputs()->mutable_image();
        if (channels == 1) {
          ToProtoImage(file.volume.image, image);
        } else {
          ToProtoImage(ChannelOf(file.volume.image, c), image);
        }
        image->mutable_spacing()->set_x_mm(file.volume.spacing.x_mm);
        image->mutable_spacing()->set_y_mm(file.volume.spacing.y_mm);
        image->mutable_spacing()->set_z_mm(file.volume.spacing.z_mm);
      }
      files.push_back(std::move(file));
    }
    grpc::ClientContext context;
    PrepareContext(connection, &context);
    v1::MorphologyResponse response;
    const grpc::Status status = stub->Morphology(&context, request, &response);
    if (!status.ok()) return ReportRpcError(status);
    if (response.results_size() != request.inputs_size()) {
      std::fprintf(stderr, "error: %d results for %d images\n", response.results_size(),
                   request.inputs_size());
      return kExitRpcError;
    }
    ++calls;
    images += request.inputs_size();
    timing = TimingTrailerText(context);
    for (const BatchFile& file : files) {
      (WriteResult(command, file, response) ? written : failed) += 1;
    }
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (command.json) {
    std::printf(
        "{\"output\": \"%s\", \"files\": %d, \"written\": %d, \"failed\": %d, \"images\": %d, "
        "\"calls\": %d, \"batch\": %d, \"ms\": %.3f, \"images_per_s\": %.1f, "
        "\"server_timing\": \"%s\"}\n",
        command.output.c_str(), static_cast<int>(paths->size()), written, failed, images, calls,
        command.batch, ms, images / (ms * 1e-3), timing.c_str());
  } else {
    std::printf(
        "wrote %d of %zu files to %s in %.2f ms: %d images in %d calls of up to %d, %.1f "
        "images/s; server (last call): %s\n",
        written, paths->size(), command.output.c_str(), ms, images, calls, command.batch,
        images / (ms * 1e-3), timing.c_str());
  }
  return failed == 0 ? kExitOk : kExitRpcError;
}

}  // namespace cuimg
