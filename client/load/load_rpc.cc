#include "client/load/load_rpc.h"

#include <algorithm>
#include <filesystem>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/commands/command_requests.h"
#include "client/connection.h"
#include "client/image_convert.h"
#include "client/io/image_file.h"
#include "client/io/video_frames.h"
#include "client/io/volume_file.h"
#include "client/load/load_stream.h"
#include "client/morphology_spec.h"
#include "client/request_building.h"
#include "cuimg/common/status_macros.h"
#include "proto/wire_contract.h"

namespace cuimg {

std::string LoadRpc::ServerTimingOf(const grpc::ClientContext& context,
                                    const google::protobuf::Message&) const {
  return TimingTrailerText(context);
}

namespace {

template <typename Request, typename Response>
class UnaryLoadRpc final : public LoadRpc {
 public:
  using Method = void (v1::Imaging::StubInterface::async_interface::*)(
      grpc::ClientContext*, const Request*, Response*, std::function<void(grpc::Status)>);

  // `by_slot`: the request follows the slot (--shm: each slot its own result region), else the
  // call number (calls cycle through the inputs).
  UnaryLoadRpc(Payload payload, std::vector<Request> requests, Method method, bool by_slot = false)
      : LoadRpc(std::move(payload)),
        requests_(std::move(requests)),
        method_(method),
        by_slot_(by_slot) {}

  std::unique_ptr<google::protobuf::Message> NewResponse() const override {
    return std::make_unique<Response>();
  }
  int PayloadFor(int slot, std::int64_t call) const override {
    const std::int64_t n = static_cast<std::int64_t>(requests_.size());
    return static_cast<int>((by_slot_ ? slot : call) % n);
  }
  void Start(v1::Imaging::Stub& stub, int payload, grpc::ClientContext* context,
             google::protobuf::Message* response,
             std::function<void(grpc::Status)> done) const override {
    const Request& request = requests_[static_cast<std::size_t>(payload)];
    (stub.async()->*method_)(context, &request, static_cast<Response*>(response), std::move(done));
  }
  std::size_t request_bytes() const override {
    std::size_t total = 0;
    for (const Request& r : requests_) total += r.ByteSizeLong();
    return total / requests_.size();
  }

 private:
  const std::vector<Request> requests_;
  const Method method_;
  const bool by_slot_;
};

template <typename Request, typename Response>
std::unique_ptr<LoadRpc> MakeUnary(LoadRpc::Payload payload, std::vector<Request> requests,
                                   typename UnaryLoadRpc<Request, Response>::Method method) {
  return std::make_unique<UnaryLoadRpc<Request, Response>>(std::move(payload), std::move(requests),
                                                           method);
}

absl::StatusOr<PixelType> ParsePixelType(const std::string& name) {
  if (name == "u8") return PixelType::kU8;
  if (name == "u16") return PixelType::kU16;
  if (name == "i16") return PixelType::kI16;
  if (name == "f32") return PixelType::kF32;
  return absl::InvalidArgumentError("--pixel_type: expected u8, u16, i16 or f32");
}

// Random pixels of --image_size and --pixel_type; f32 values stay finite (each element's top
// byte is fixed, so values lie in [0.5, 2)).
absl::StatusOr<Image> GeneratedImage(const LoadCommand& c) {
  CUIMG_ASSIGN_OR_RETURN(const auto size, ParseSize(c.size));
  CUIMG_ASSIGN_OR_RETURN(const PixelType type, ParsePixelType(c.pixel_type));
  Image image(type, Extent{size[0], size[1], std::max(size[2], 1)});
  std::mt19937 rng(1);
  const std::size_t pixel = PixelSize(type);
  for (std::size_t i = 0; i < image.size_bytes(); ++i) {
    image.bytes()[i] = static_cast<std::uint8_t>(pixel == 4 && i % 4 == 3 ? 0x3f : rng());
  }
  return image;
}

bool HasImageExtension(const std::string& path, bool encoded_only) {
  const std::string lower = absl::AsciiStrToLower(path);
  for (const char* ext : {".png", ".jpg", ".jpeg"}) {
    if (absl::EndsWith(lower, ext)) return true;
  }
  if (encoded_only) return false;
  for (const char* ext : {".tif", ".tiff", ".npy", ".nrrd", ".nhdr"}) {
    if (absl::EndsWith(lower, ext)) return true;
  }
  return false;
}

bool IsEncodedImagePath(const std::string& path) { return HasImageExtension(path, true); }

// The image files of a folder (PNG, JPEG, TIFF, NumPy, NRRD), sorted by name; empty for a file,
// or for a folder of none (a DICOM series is a folder of slices, one volume).
absl::StatusOr<std::vector<std::string>> FolderImages(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(path, error)) return std::vector<std::string>{};
  std::vector<std::string> paths;
  for (const fs::directory_entry& e : fs::directory_iterator(path, error)) {
    if (e.is_regular_file(error) && HasImageExtension(e.path().string(), false)) {
      paths.push_back(e.path().string());
    }
  }
  if (error) {
    return absl::InvalidArgumentError(absl::StrCat("--input: ", path, ": ", error.message()));
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// One payload of an image RPC: the pixels (and spacing), or for detect the encoded file.
struct Source {
  VolumeFile volume;
  std::string encoded;  // detect: a PNG/JPEG sent as is
};

// The video's frames, every `every`th, at most `max_frames` (0: kMaxVideoFrames): all are held
// in memory, built once, so the calls measure the server rather than the decoder.
absl::StatusOr<std::vector<Source>> VideoSources(const LoadCommand& c) {
  if (c.every < 1 || c.max_frames < 0) {
    return absl::InvalidArgumentError("--every must be >= 1, --max_frames >= 0");
  }
  absl::StatusOr<VideoFrames> opened = VideoFrames::Open(c.video);
  if (!opened.ok()) return AsReadError(opened.status());
  VideoFrames& video = *opened;
  const int most = c.max_frames > 0 ? c.max_frames : kMaxVideoFrames;
  std::vector<Source> out;
  for (int index = 0; static_cast<int>(out.size()) < most; ++index) {
    Source frame;
    absl::StatusOr<bool> more = video.Next(&frame.volume.image);
    if (!more.ok()) return AsReadError(more.status());
    if (!*more) break;
    if (index % c.every == 0) out.push_back(std::move(frame));
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--video: ", c.video, ": no frames"));
  }
  return out;
}

// The payloads of an image RPC: the --video frames, the images of an --input folder, the
// --input file (a folder without images: a DICOM series), or one generated image. `encoded`:
// PNG/JPEG files stay encoded (detect).
absl::StatusOr<std::vector<Source>> ImageSources(const LoadCommand& c, bool encoded) {
  if (!c.video.empty()) {
    if (!c.input.empty()) return absl::InvalidArgumentError("give one of --input and --video");
    return VideoSources(c);
  }
  std::vector<Source> out;
  if (c.input.empty()) {
    CUIMG_ASSIGN_OR_RETURN(out.emplace_back().volume.image, GeneratedImage(c));
    return out;
  }
  CUIMG_ASSIGN_OR_RETURN(std::vector<std::string> paths, FolderImages(c.input));
  std::error_code error;
  if (paths.empty() && std::filesystem::is_directory(c.input, error)) {
    absl::StatusOr<VolumeFile> series = ReadVolumeFile(c.input);
    if (!series.ok()) {
      return AsReadError(
          absl::Status(series.status().code(),
                       absl::StrCat("--input: ", c.input,
                                    " holds no image file (.png, .jpg, .tif, .npy, .nrrd) and no "
                                    "DICOM series (",
                                    series.status().message(), ")")));
    }
    out.push_back(Source{*std::move(series), ""});
    return out;
  }
  if (paths.empty()) paths.push_back(c.input);
  for (const std::string& path : paths) {
    Source& source = out.emplace_back();
    if (encoded && IsEncodedImagePath(path)) {
      absl::StatusOr<std::vector<std::uint8_t>> bytes = ReadFileBytes(path);
      if (!bytes.ok()) return AsReadError(bytes.status());
      source.encoded.assign(bytes->begin(), bytes->end());
    } else {
      absl::StatusOr<VolumeFile> volume = ReadVolumeFile(path);
      if (!volume.ok()) return AsReadError(volume.status());
      source.volume = *std::move(volume);
    }
  }
  return out;
}

// The one-channel images of the morphology, gradient and pyramid RPCs (colour made gray).
absl::StatusOr<std::vector<Source>> GrayInputs(const LoadCommand& c) {
  CUIMG_ASSIGN_OR_RETURN(std::vector<Source> sources, ImageSources(c, false));
  for (Source& s : sources) {
    s.volume.image = ToGray(s.volume.image);
    if (s.volume.image.channels() != 1) {
      return absl::InvalidArgumentError("--input: needs a gray or BGR image");
    }
  }
  return sources;
}

std::string SizeName(const Extent& e) {
  return e.depth > 1 ? absl::StrFormat("%dx%dx%d", e.width, e.height, e.depth)
                     : absl::StrFormat("%dx%d", e.width, e.height);
}

// The images' source: the file, folder or video (and how many images), their sizes (each
// distinct one, sorted) and type.
void DescribeImages(const LoadCommand& c, const std::vector<Source>& sources,
                    LoadRpc::Payload* payload) {
  if (!c.video.empty()) {
    payload->push_back({"video", c.video});
    payload->push_back({"frames", absl::StrCat(sources.size())});
  } else if (!c.input.empty()) {
    payload->push_back({"input", c.input});
    if (sources.size() > 1) payload->push_back({"images", absl::StrCat(sources.size())});
  }
  std::vector<std::string> sizes;
  std::int64_t encoded_bytes = 0;
  for (const Source& s : sources) {
    encoded_bytes += static_cast<std::int64_t>(s.encoded.size());
    if (s.encoded.empty()) sizes.push_back(SizeName(s.volume.image.extent()));
  }
  if (encoded_bytes > 0) payload->push_back({"encoded_bytes", absl::StrCat(encoded_bytes)});
  if (sizes.empty()) return;
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  payload->push_back({"size", sizes.size() == 1 ? sizes[0] : absl::StrJoin(sizes, " ")});
  payload->push_back(
      {"pixel_type", c.input.empty() && c.video.empty() ? c.pixel_type : "from input"});
}

absl::Status Need2D(const Image& image, absl::string_view rpc) {
  if (image.extent().depth > 1) {
    return absl::InvalidArgumentError(absl::StrCat("--rpc ", rpc, ": needs a 2D image"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LoadRpc>> Morphology(const LoadCommand& c,
                                                    const SharedMemoryRewrite& shared_memory) {
  v1::MorphologyRequest base;
  CUIMG_ASSIGN_OR_RETURN(const std::vector<v1::MorphologyStep> steps, ParseSteps(c.steps));
  for (const v1::MorphologyStep& s : steps) *base.add_steps() = s;
  CUIMG_ASSIGN_OR_RETURN(const std::vector<Source> sources, GrayInputs(c));
  LoadRpc::Payload payload = {{"steps", c.steps}};
  DescribeImages(c, sources, &payload);
  std::vector<v1::MorphologyRequest> requests;
  for (const Source& source : sources) {
    v1::MorphologyRequest& request = requests.emplace_back(base);
    ToProtoImage(source.volume.image, request.mutable_input()->mutable_image());
  }
  if (c.shm) {
    if (requests.size() != 1) {
      return absl::InvalidArgumentError("--shm: one image (not a folder of them or a --video)");
    }
    CUIMG_ASSIGN_OR_RETURN(requests, shared_memory(requests[0]));
  }
  using Rpc = UnaryLoadRpc<v1::MorphologyRequest, v1::MorphologyResponse>;
  const Rpc::Method method = &v1::Imaging::StubInterface::async_interface::Morphology;
  return std::make_unique<Rpc>(std::move(payload), std::move(requests), method, c.shm);
}

absl::StatusOr<std::unique_ptr<LoadRpc>> Gradient(const LoadCommand& c) {
  const v1::GradientRequest base = GradientParameters(c.gradient);
  CUIMG_ASSIGN_OR_RETURN(const std::vector<Source> sources, GrayInputs(c));
  std::vector<v1::GradientRequest> requests;
  for (const Source& source : sources) {
    v1::Image* image = requests.emplace_back(base).mutable_input()->mutable_image();
    ToProtoImage(source.volume.image, image);
    image->mutable_spacing()->set_x_mm(source.volume.spacing.x_mm);
    image->mutable_spacing()->set_y_mm(source.volume.spacing.y_mm);
    image->mutable_spacing()->set_z_mm(source.volume.spacing.z_mm);
  }
  LoadRpc::Payload payload = {{"kernel_length", absl::StrCat(c.gradient.kernel_length)},
                              {"sigma", absl::StrCat(c.gradient.sigma)}};
  DescribeImages(c, sources, &payload);
  return MakeUnary<v1::GradientRequest, v1::GradientResponse>(
      std::move(payload), std::move(requests),
      &v1::Imaging::StubInterface::async_interface::Gradient);
}

absl::StatusOr<std::unique_ptr<LoadRpc>> Pyramid(const LoadCommand& c) {
  CUIMG_ASSIGN_OR_RETURN(const v1::PyramidRequest base, PyramidParameters(c.pyramid));
  CUIMG_ASSIGN_OR_RETURN(const std::vector<Source> sources, GrayInputs(c));
  std::vector<v1::PyramidRequest> requests;
  for (const Source& source : sources) {
    CUIMG_RETURN_IF_ERROR(Need2D(source.volume.image, "pyramid"));
    ToProtoImage(source.volume.image, requests.emplace_back(base).mutable_input()->mutable_image());
  }
  LoadRpc::Payload payload = {{"levels", absl::StrCat(c.pyramid.levels)},
                              {"ratio", absl::StrCat(c.pyramid.ratio)},
                              {"mode", c.pyramid.mode}};
  DescribeImages(c, sources, &payload);
  return MakeUnary<v1::PyramidRequest, v1::PyramidResponse>(
      std::move(payload), std::move(requests),
      &v1::Imaging::StubInterface::async_interface::Pyramid);
}

// A PNG/JPEG --input (or one in an --input folder) travels encoded (the server decodes it, as
// for `cuimg detect`); another image file, a video frame or a generated image travels as u8
// pixels.
absl::StatusOr<std::unique_ptr<LoadRpc>> Detect(const LoadCommand& c) {
  CUIMG_ASSIGN_OR_RETURN(const v1::DetectPedestriansRequest base, DetectParameters(c.detect));
  if (c.input.empty() && c.video.empty() && c.pixel_type != "u8") {
    return absl::InvalidArgumentError("--rpc detect: needs --pixel_type u8");
  }
  CUIMG_ASSIGN_OR_RETURN(const std::vector<Source> sources, ImageSources(c, true));
  std::vector<v1::DetectPedestriansRequest> requests;
  for (const Source& source : sources) {
    v1::DetectPedestriansRequest& request = requests.emplace_back(base);
    if (!source.encoded.empty()) {
      request.mutable_input()->set_encoded(source.encoded);
      continue;
    }
    CUIMG_RETURN_IF_ERROR(Need2D(source.volume.image, "detect"));
    if (source.volume.image.type() != PixelType::kU8) {
      return absl::InvalidArgumentError("--rpc detect: needs an 8-bit image");
    }
    ToProtoImage(source.volume.image, request.mutable_input()->mutable_image());
  }
  LoadRpc::Payload payload = {{"model", c.detect.model.empty() ? "default" : c.detect.model}};
  DescribeImages(c, sources, &payload);
  if (c.detect_stream) {
    payload.emplace_back("detect_stream", absl::StrCat(std::max(1, c.channels), " streams"));
    return MakeDetectStreamLoad(std::move(payload), std::move(requests));
  }
  return MakeUnary<v1::DetectPedestriansRequest, v1::DetectPedestriansResponse>(
      std::move(payload), std::move(requests),
      &v1::Imaging::StubInterface::async_interface::DetectPedestrians);
}

// The mesh travels inline with every call (a load test of the whole request path).
absl::StatusOr<std::unique_ptr<LoadRpc>> Deform(const LoadCommand& c) {
  if (!c.video.empty()) return absl::InvalidArgumentError("--rpc deform: no --video");
  std::error_code error;
  if (std::filesystem::is_directory(c.input, error)) {
    return absl::InvalidArgumentError("--rpc deform: --input is one mesh file or torus:N,M");
  }
  const std::string input =
      c.input.empty() ? absl::StrFormat("torus:%d,%d", c.torus_n, c.torus_m) : c.input;
  CUIMG_ASSIGN_OR_RETURN(const Mesh mesh, LoadMeshInput(input));
  CUIMG_ASSIGN_OR_RETURN(const Lattice lattice, DeformLattice(c.deform, mesh));
  v1::DeformRequest request;
  ToProtoMesh(mesh, request.mutable_mesh()->mutable_mesh());
  ToProtoLattice(lattice, request.mutable_lattice());
  LoadRpc::Payload payload = {{"mesh", input},
                              {"vertices", absl::StrCat(mesh.vertex_count())},
                              {"triangles", absl::StrCat(mesh.triangle_count())},
                              {"lattice", c.deform.lattice_file.empty() ? c.deform.controls.counts
                                                                        : c.deform.lattice_file}};
  std::vector<v1::DeformRequest> requests;
  requests.push_back(std::move(request));
  return MakeUnary<v1::DeformRequest, v1::DeformResponse>(
      std::move(payload), std::move(requests),
      &v1::Imaging::StubInterface::async_interface::Deform);
}

}  // namespace

absl::StatusOr<std::unique_ptr<LoadRpc>> MakeLoadRpc(const LoadCommand& c,
                                                     const SharedMemoryRewrite& shared_memory) {
  if (c.detect_stream && c.rpc != "detect") {
    return absl::InvalidArgumentError("--detect_stream: only with --rpc detect");
  }
  if (c.shm && c.rpc != "morphology") {
    return absl::InvalidArgumentError("--shm: only with --rpc morphology");
  }
  if (c.rpc == "morphology") return Morphology(c, shared_memory);
  if (c.rpc == "gradient") return Gradient(c);
  if (c.rpc == "pyramid") return Pyramid(c);
  if (c.rpc == "detect") return Detect(c);
  if (c.rpc == "deform") return Deform(c);
  return absl::InvalidArgumentError(
      "--rpc: expected morphology, gradient, pyramid, detect or deform");
}

}  // namespace cuimg
