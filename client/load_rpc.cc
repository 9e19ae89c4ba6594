#include "client/load_rpc.h"

#include <algorithm>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/image_convert.h"
#include "client/io/image_file.h"
#include "client/io/volume_file.h"
#include "client/morphology_spec.h"
#include "client/request_building.h"
#include "cuimg/common/status_macros.h"

namespace cuimg {
namespace {

template <typename Request, typename Response>
class UnaryLoadRpc final : public LoadRpc {
 public:
  using Method = void (v1::Imaging::StubInterface::async_interface::*)(
      grpc::ClientContext*, const Request*, Response*, std::function<void(grpc::Status)>);

  UnaryLoadRpc(Payload payload, std::vector<Request> requests, Method method)
      : LoadRpc(std::move(payload)), requests_(std::move(requests)), method_(method) {}

  std::unique_ptr<google::protobuf::Message> NewResponse() const override {
    return std::make_unique<Response>();
  }
  void Start(v1::Imaging::Stub& stub, int slot, grpc::ClientContext* context,
             google::protobuf::Message* response,
             std::function<void(grpc::Status)> done) const override {
    const Request& request = requests_[static_cast<std::size_t>(slot) % requests_.size()];
    (stub.async()->*method_)(context, &request, static_cast<Response*>(response),
                             std::move(done));
  }
  std::size_t request_bytes() const override { return requests_[0].ByteSizeLong(); }

 private:
  const std::vector<Request> requests_;
  const Method method_;
};

template <typename Request, typename Response>
std::unique_ptr<LoadRpc> MakeUnary(
    LoadRpc::Payload payload, Request request,
    typename UnaryLoadRpc<Request, Response>::Method method) {
  std::vector<Request> requests;
  requests.push_back(std::move(request));
  return std::make_unique<UnaryLoadRpc<Request, Response>>(std::move(payload),
                                                           std::move(requests), method);
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

// The one-channel image of the image RPCs: --input (colour made gray), else generated.
absl::StatusOr<VolumeFile> GrayInput(const LoadCommand& c) {
  VolumeFile volume;
  if (c.input.empty()) {
    CUIMG_ASSIGN_OR_RETURN(volume.image, GeneratedImage(c));
    return volume;
  }
  CUIMG_ASSIGN_OR_RETURN(volume, ReadVolumeFile(c.input));
  volume.image = ToGray(volume.image);
  if (volume.image.channels() != 1) {
    return absl::InvalidArgumentError("--input: needs a gray or BGR image");
  }
  return volume;
}

// The image's source: the file, or its generated size and type.
void DescribeImage(const LoadCommand& c, const Image& image, LoadRpc::Payload* payload) {
  const Extent& e = image.extent();
  if (!c.input.empty()) payload->push_back({"input", c.input});
  payload->push_back({"size", e.depth > 1 ? absl::StrFormat("%dx%dx%d", e.width, e.height, e.depth)
                                          : absl::StrFormat("%dx%d", e.width, e.height)});
  payload->push_back({"pixel_type", c.input.empty() ? c.pixel_type : "from input"});
}

absl::Status Need2D(const Image& image, absl::string_view rpc) {
  if (image.extent().depth > 1) {
    return absl::InvalidArgumentError(absl::StrCat("--rpc ", rpc, ": needs a 2D image"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LoadRpc>> Morphology(const LoadCommand& c,
                                                    const SharedMemoryRewrite& shared_memory) {
  v1::MorphologyRequest request;
  CUIMG_ASSIGN_OR_RETURN(const std::vector<v1::MorphologyStep> steps, ParseSteps(c.steps));
  for (const v1::MorphologyStep& s : steps) *request.add_steps() = s;
  CUIMG_ASSIGN_OR_RETURN(const VolumeFile input, GrayInput(c));
  ToProtoImage(input.image, request.mutable_input()->mutable_image());
  LoadRpc::Payload payload = {{"steps", c.steps}};
  DescribeImage(c, input.image, &payload);
  std::vector<v1::MorphologyRequest> requests;
  if (c.shm) {
    CUIMG_ASSIGN_OR_RETURN(requests, shared_memory(request));
  } else {
    requests.push_back(std::move(request));
  }
  using Rpc = UnaryLoadRpc<v1::MorphologyRequest, v1::MorphologyResponse>;
  const Rpc::Method method = &v1::Imaging::StubInterface::async_interface::Morphology;
  return std::make_unique<Rpc>(std::move(payload), std::move(requests), method);
}

absl::StatusOr<std::unique_ptr<LoadRpc>> Gradient(const LoadCommand& c) {
  v1::GradientRequest request = GradientParameters(c.gradient);
  CUIMG_ASSIGN_OR_RETURN(const VolumeFile input, GrayInput(c));
  v1::Image* image = request.mutable_input()->mutable_image();
  ToProtoImage(input.image, image);
  image->mutable_spacing()->set_x_mm(input.spacing.x_mm);
  image->mutable_spacing()->set_y_mm(input.spacing.y_mm);
  image->mutable_spacing()->set_z_mm(input.spacing.z_mm);
  LoadRpc::Payload payload = {{"kernel_length", absl::StrCat(c.gradient.kernel_length)},
                              {"sigma", absl::StrCat(c.gradient.sigma)}};
  DescribeImage(c, input.image, &payload);
  return MakeUnary<v1::GradientRequest, v1::GradientResponse>(
      std::move(payload), std::move(request),
      &v1::Imaging::StubInterface::async_interface::Gradient);
}

absl::StatusOr<std::unique_ptr<LoadRpc>> Pyramid(const LoadCommand& c) {
  CUIMG_ASSIGN_OR_RETURN(v1::PyramidRequest request, PyramidParameters(c.pyramid));
  CUIMG_ASSIGN_OR_RETURN(const VolumeFile input, GrayInput(c));
  CUIMG_RETURN_IF_ERROR(Need2D(input.image, "pyramid"));
  ToProtoImage(input.image, request.mutable_input()->mutable_image());
  LoadRpc::Payload payload = {{"levels", absl::StrCat(c.pyramid.levels)},
                              {"ratio", absl::StrCat(c.pyramid.ratio)},
                              {"mode", c.pyramid.mode}};
  DescribeImage(c, input.image, &payload);
  return MakeUnary<v1::PyramidRequest, v1::PyramidResponse>(
      std::move(payload), std::move(request),
      &v1::Imaging::StubInterface::async_interface::Pyramid);
}

bool IsEncodedImagePath(const std::string& path) {
  const std::string lower = absl::AsciiStrToLower(path);
  return absl::EndsWith(lower, ".png") || absl::EndsWith(lower, ".jpg") ||
         absl::EndsWith(lower, ".jpeg");
}

// A PNG/JPEG --input travels encoded (the server decodes it, as for `cuimg detect`); another
// image file or a generated one travels as u8 pixels.
absl::StatusOr<std::unique_ptr<LoadRpc>> Detect(const LoadCommand& c) {
  CUIMG_ASSIGN_OR_RETURN(v1::DetectPedestriansRequest request, DetectParameters(c.detect));
  LoadRpc::Payload payload = {{"model", c.detect.model.empty() ? "default" : c.detect.model}};
  if (!c.input.empty() && IsEncodedImagePath(c.input)) {
    CUIMG_ASSIGN_OR_RETURN(const std::vector<std::uint8_t> bytes, ReadFileBytes(c.input));
    request.mutable_input()->set_encoded(std::string(bytes.begin(), bytes.end()));
    payload.push_back({"input", c.input});
    payload.push_back({"encoded_bytes", absl::StrCat(bytes.size())});
  } else {
    Image image;
    if (c.input.empty()) {
      if (c.pixel_type != "u8") return absl::InvalidArgumentError("--rpc detect: needs --pixel_type u8");
      CUIMG_ASSIGN_OR_RETURN(image, GeneratedImage(c));
    } else {
      CUIMG_ASSIGN_OR_RETURN(image, ReadImageFile(c.input));
    }
    CUIMG_RETURN_IF_ERROR(Need2D(image, "detect"));
    if (image.type() != PixelType::kU8) {
      return absl::InvalidArgumentError("--rpc detect: needs an 8-bit image");
    }
    ToProtoImage(image, request.mutable_input()->mutable_image());
    DescribeImage(c, image, &payload);
  }
  return MakeUnary<v1::DetectPedestriansRequest, v1::DetectPedestriansResponse>(
      std::move(payload), std::move(request),
      &v1::Imaging::StubInterface::async_interface::DetectPedestrians);
}

// The mesh travels inline with every call (a load test of the whole request path).
absl::StatusOr<std::unique_ptr<LoadRpc>> Deform(const LoadCommand& c) {
  const std::string input =
      c.input.empty() ? absl::StrFormat("torus:%d,%d", c.torus_n, c.torus_m) : c.input;
  CUIMG_ASSIGN_OR_RETURN(const Mesh mesh, LoadMeshInput(input));
  CUIMG_ASSIGN_OR_RETURN(const Lattice lattice, DeformLattice(c.deform, mesh));
  v1::DeformRequest request;
  ToProtoMesh(mesh, request.mutable_mesh()->mutable_mesh());
  ToProtoLattice(lattice, request.mutable_lattice());
  LoadRpc::Payload payload = {
      {"mesh", input},
      {"vertices", absl::StrCat(mesh.vertex_count())},
      {"triangles", absl::StrCat(mesh.triangle_count())},
      {"lattice", c.deform.lattice_file.empty() ? c.deform.controls.counts : c.deform.lattice_file}};
  return MakeUnary<v1::DeformRequest, v1::DeformResponse>(
      std::move(payload), std::move(request),
      &v1::Imaging::StubInterface::async_interface::Deform);
}

}  // namespace

absl::StatusOr<std::unique_ptr<LoadRpc>> MakeLoadRpc(const LoadCommand& c,
                                                     const SharedMemoryRewrite& shared_memory) {
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
