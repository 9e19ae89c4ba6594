// The bad-request corpus, part 2: the refusals only the service makes (handles, decoding, shared
// memory, admission, the streams' order, the resident store), each sent over an in-process
// channel to the CPU backend. Each gets its expected code, reason and field, and keeps the error
// contract over the wire: a documented reason and a field that resolves in the message it is
// about (tests/testing/error_contract.h). Every refusal is counted once under its reason
// (cuimg_rejected_total{reason}), whatever the RPC. Part 1 (bad_request_corpus_test.cc) walks the
// validators.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cuimg/codec/image_codec.h"
#include "proto/wire_contract.h"
#include "server/validation/proto_conversion.h"
#include "tests/server/test_server.h"
#include "tests/testing/error_contract.h"
#include "tests/testing/random_image.h"
#include "tests/testing/shm_object.h"

namespace cuimg {
namespace {

using grpc::StatusCode;

constexpr std::uint64_t kResidentBudget = 40000;
constexpr std::uint32_t kMaxTtl = 60;

ServerOptions CorpusOptions() {
  ServerOptions options = testing::TestServerOptions();
  options.shared_memory.enabled = true;
  options.shared_memory.max_bytes_per_identity = 1 << 20;
  options.resident_budget_bytes = kResidentBudget;
  options.resident_max_ttl_seconds = kMaxTtl;
  options.max_inflight_bytes_per_device = 8 << 20;
  options.upload_idle_timeout_ms = 300;
  options.max_grouped_hits = 1;
  options.max_request_work = 1e8;
  options.limits.max_decoded_pixels = 1 << 16;
  return options;
}

struct Expected {
  StatusCode code;
  std::string reason;
  std::string field;
};

// The corpus: each refusal checked, and counted by reason for the metrics' check.
class Corpus {
 public:
  // `status` is a refusal of a call whose field paths are relative to `request` (the RPC's
  // request, or the stream's message type).
  void Check(const std::string& name, const grpc::Status& status,
             const google::protobuf::Message& request, const Expected& want,
             const grpc::ClientContext* ctx = nullptr) {
    SCOPED_TRACE(name);
    EXPECT_EQ(status.error_code(), want.code) << status.error_message();
    const std::optional<ErrorDetails> details = ParseErrorDetails(status);
    ASSERT_TRUE(details.has_value()) << status.error_message();
    EXPECT_EQ(details->reason, want.reason) << status.error_message();
    EXPECT_EQ(details->field, want.field) << status.error_message();
    EXPECT_EQ(testing::ErrorContractError(details->reason, details->field, status.error_message(),
                                          request, false),
              "")
        << status.error_message();
    // RESOURCE_EXHAUSTED that retrying cannot help says so in gRPC's own hint.
    if (ctx != nullptr && want.code == StatusCode::RESOURCE_EXHAUSTED &&
        want.reason != "OVERLOADED") {
      const auto& trailers = ctx->GetServerTrailingMetadata();
      auto it = trailers.find("grpc-retry-pushback-ms");
      ASSERT_NE(it, trailers.end());
      EXPECT_EQ(std::string(it->second.data(), it->second.size()), "-1");
    }
    ++counts_[details->reason];
  }
  const std::map<std::string, int>& counts() const { return counts_; }

 private:
  std::map<std::string, int> counts_;
};

v1::Image Gray(int width, int height, int depth = 0) {
  v1::Image image;
  image.set_pixel_type(v1::PIXEL_TYPE_U8);
  image.set_width(width);
  image.set_height(height);
  image.set_depth(depth);
  image.set_data(std::string(static_cast<std::size_t>(width) * height * std::max(depth, 1), '\7'));
  return image;
}

v1::MorphologyRequest Dilate(int width, int height, int element = 3) {
  v1::MorphologyRequest r;
  *r.mutable_input()->mutable_image() = Gray(width, height);
  v1::MorphologyStep* step = r.add_steps();
  step->set_op(v1::MORPHOLOGY_OP_DILATE);
  step->mutable_element()->set_shape(v1::ELEMENT_SHAPE_RECT);
  step->mutable_element()->set_width(element);
  step->mutable_element()->set_height(element);
  return r;
}

grpc::Status Morphology(testing::TestServer& s, const v1::MorphologyRequest& r,
                        grpc::ClientContext* ctx) {
  v1::MorphologyResponse response;
  return s.stub().Morphology(ctx, r, &response);
}

// An Upload of `messages`; `pause` between them (the idle timeout's case).
grpc::Status Upload(testing::TestServer& s, const std::vector<v1::UploadRequest>& messages,
                    std::string* handle = nullptr,
                    std::chrono::milliseconds pause = std::chrono::milliseconds(0)) {
  grpc::ClientContext ctx;
  v1::UploadResponse response;
  auto writer = s.stub().Upload(&ctx, &response);
  for (const v1::UploadRequest& m : messages) {
    if (!writer->Write(m)) break;
    std::this_thread::sleep_for(pause);
  }
  writer->WritesDone();
  const grpc::Status status = writer->Finish();
  if (handle != nullptr) *handle = response.object().handle();
  return status;
}

template <typename Request, typename Response>
grpc::Status Stream(std::unique_ptr<grpc::ClientReaderWriter<Request, Response>> stream,
                    const std::vector<Request>& messages) {
  for (const Request& m : messages) {
    if (!stream->Write(m)) break;
  }
  stream->WritesDone();
  Response response;
  while (stream->Read(&response)) {
  }
  return stream->Finish();
}

grpc::Status VolumeStream(testing::TestServer& s,
                          const std::vector<v1::VolumeStreamRequest>& messages) {
  grpc::ClientContext ctx;
  return Stream(s.stub().ProcessVolumeStream(&ctx), messages);
}

grpc::Status DetectStream(testing::TestServer& s, const std::vector<v1::DetectFrame>& frames) {
  grpc::ClientContext ctx;
  return Stream(s.stub().DetectStream(&ctx), frames);
}

// Bytes that are no MorphologyRequest, sent as one.
grpc::Status Malformed(testing::TestServer& s) {
  grpc::GenericStub stub(s.channel());
  grpc::ClientContext ctx;
  grpc::CompletionQueue queue;
  // Field 1 (input) claims 5 bytes; 2 follow.
  const grpc::Slice slice(std::string({'\x0a', '\x05', 'a', 'b'}));
  const grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer reply;
  grpc::Status status;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
      stub.PrepareUnaryCall(&ctx, "/cuimg.v1.Imaging/Morphology", request, &queue);
  call->StartCall();
  call->Finish(&reply, &status, &status);
  void* tag = nullptr;
  bool ok = false;
  queue.Next(&tag, &ok);
  queue.Shutdown();
  while (queue.Next(&tag, &ok)) {
  }
  return status;
}

v1::UploadRequest ImageUpload(const v1::Image& image) {
  v1::UploadRequest m;
  *m.mutable_image() = image;
  return m;
}

v1::UploadRequest Chunk(const std::string& bytes) {
  v1::UploadRequest m;
  m.set_chunk(bytes);
  return m;
}

v1::VolumeStreamRequest GradientHeader(int width, int height, int depth) {
  v1::VolumeStreamRequest m;
  v1::Image* volume = m.mutable_header()->mutable_volume();
  *volume = Gray(width, height, depth);
  volume->clear_data();
  m.mutable_header()->mutable_gradient()->set_kernel_length(3);
  return m;
}

v1::VolumeStreamRequest Slab(std::size_t bytes) {
  v1::VolumeStreamRequest m;
  m.set_slab(std::string(bytes, '\1'));
  return m;
}

// The counter's value per reason label.
std::map<std::string, int> RejectedByReason(prometheus::Registry& registry) {
  std::map<std::string, int> out;
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != "cuimg_rejected_total") continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      for (const prometheus::ClientMetric::Label& label : metric.label) {
        if (label.name == "reason") out[label.value] += static_cast<int>(metric.counter.value);
      }
    }
  }
  return out;
}

TEST(BadRequestService, EveryRefusalHasItsReasonAndFieldAndIsCountedOnce) {
  testing::TestServer server(CorpusOptions());
  Corpus corpus;

  // Fixtures: a resident volume (no z spacing) and a resident mesh.
  v1::Image volume = Gray(8, 8, 4);
  volume.mutable_spacing()->set_x_mm(1);
  volume.mutable_spacing()->set_y_mm(1);
  std::string image_handle;
  ASSERT_TRUE(Upload(server, {ImageUpload(volume)}, &image_handle).ok());
  v1::UploadRequest mesh_upload;
  {
    v1::Mesh* mesh = mesh_upload.mutable_mesh();
    const float positions[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
    const std::uint32_t triangles[3] = {0, 1, 2};
    mesh->set_vertex_count(3);
    mesh->set_triangle_count(1);
    mesh->set_positions(reinterpret_cast<const char*>(positions), sizeof(positions));
    mesh->set_triangles(reinterpret_cast<const char*>(triangles), sizeof(triangles));
  }
  std::string mesh_handle;
  ASSERT_TRUE(Upload(server, {mesh_upload}, &mesh_handle).ok());

  // --- Unary image RPCs: what only the service knows.
  {
    v1::MorphologyRequest r = Dilate(8, 8);
    r.mutable_input()->set_handle("nope");
    grpc::ClientContext ctx;
    corpus.Check("unknown handle", Morphology(server, r, &ctx), r,
                 {StatusCode::NOT_FOUND, "HANDLE_NOT_FOUND", "input.handle"});
    r.mutable_input()->set_handle(mesh_handle);
    grpc::ClientContext ctx2;
    corpus.Check("a mesh as the input", Morphology(server, r, &ctx2), r,
                 {StatusCode::INVALID_ARGUMENT, "OBJECT_KIND_MISMATCH", "input.handle"});
  }
  {
    v1::MorphologyRequest r = Dilate(8, 8);
    r.mutable_input()->set_encoded(std::string("\x89PNG\r\n\x1a\n\0\0", 10));
    grpc::ClientContext ctx;
    corpus.Check("corrupt PNG", Morphology(server, r, &ctx), r,
                 {StatusCode::INVALID_ARGUMENT, "CORRUPT_ENCODED_DATA", "input.encoded"});
    r.mutable_input()->set_encoded("GIF89a");
    grpc::ClientContext ctx2;
    corpus.Check("not PNG or JPEG", Morphology(server, r, &ctx2), r,
                 {StatusCode::INVALID_ARGUMENT, "UNSUPPORTED_ENCODING", "input.encoded"});
    const Image big = testing::RandomImage(PixelType::kU8, Extent{300, 300, 1}, 1);
    absl::StatusOr<std::vector<std::uint8_t>> png = EncodePng(big.view());
    ASSERT_TRUE(png.ok());
    r.mutable_input()->set_encoded(std::string(png->begin(), png->end()));
    grpc::ClientContext ctx3;
    corpus.Check("a PNG over max_decoded_pixels", Morphology(server, r, &ctx3), r,
                 {StatusCode::INVALID_ARGUMENT, "LIMIT_EXCEEDED", "input.encoded"});
  }
  {
    // A z radius on a resident volume whose z spacing is unknown: the radius is at fault.
    v1::MorphologyRequest r = Dilate(8, 8);
    r.mutable_input()->set_handle(image_handle);
    v1::StructuringElement* e = r.mutable_steps(0)->mutable_element();
    e->clear_width();
    e->clear_height();
    e->mutable_radius()->set_x_mm(1);
    e->mutable_radius()->set_z_mm(1);
    grpc::ClientContext ctx;
    corpus.Check(
        "z radius without z spacing", Morphology(server, r, &ctx), r,
        {StatusCode::INVALID_ARGUMENT, "INVALID_COMBINATION", "steps[0].element.radius.z_mm"});
  }
  {
    v1::MorphologyRequest r = Dilate(100, 100);
    r.mutable_output()->set_keep_resident(true);
    r.mutable_output()->set_ttl_seconds(kMaxTtl + 1);
    grpc::ClientContext ctx;
    corpus.Check("TTL over the maximum", Morphology(server, r, &ctx), r,
                 {StatusCode::INVALID_ARGUMENT, "LIMIT_EXCEEDED", "output.ttl_seconds"});
    r = Dilate(250, 250);
    r.mutable_output()->set_keep_resident(true);
    grpc::ClientContext ctx2;
    corpus.Check("a result over the resident budget", Morphology(server, r, &ctx2), r,
                 {StatusCode::RESOURCE_EXHAUSTED, "LIMIT_EXCEEDED", "output.keep_resident"}, &ctx2);
  }
  {
    v1::MorphologyRequest r = Dilate(1000, 1000, 31);
    grpc::ClientContext ctx;
    corpus.Check("work over max_request_work", Morphology(server, r, &ctx), r,
                 {StatusCode::RESOURCE_EXHAUSTED, "WORK_TOO_LARGE", ""}, &ctx);
    r = Dilate(3000, 3000, 1);
    grpc::ClientContext ctx2;
    corpus.Check("bytes over the per-request limit", Morphology(server, r, &ctx2), r,
                 {StatusCode::RESOURCE_EXHAUSTED, "LIMIT_EXCEEDED", ""}, &ctx2);
  }
  corpus.Check("bytes that do not parse", Malformed(server), v1::MorphologyRequest(),
               {StatusCode::INVALID_ARGUMENT, "MALFORMED_MESSAGE", ""});
  {
    // The case: a minimum the image does not reach names PyramidRequest's own field.
    v1::PyramidRequest r;
    *r.mutable_input()->mutable_image() = Gray(64, 48);
    r.set_min_width(100);
    grpc::ClientContext ctx;
    v1::PyramidResponse response;
    corpus.Check("min_width over the image", server.stub().Pyramid(&ctx, r, &response), r,
                 {StatusCode::INVALID_ARGUMENT, "VALUE_OUT_OF_RANGE", "min_width"});
    r.mutable_input()->set_handle(image_handle);
    r.clear_min_width();
    grpc::ClientContext ctx2;
    corpus.Check("a resident volume", server.stub().Pyramid(&ctx2, r, &response), r,
                 {StatusCode::INVALID_ARGUMENT, "UNSUPPORTED_IMAGE_SHAPE", "input.handle"});
  }
  {
    v1::DeformRequest r;
    r.mutable_mesh()->set_handle("nope");
    v1::Lattice* l = r.mutable_lattice();
    l->mutable_s()->set_x(2);
    l->mutable_t()->set_y(2);
    l->mutable_u()->set_z(2);
    l->set_count_s(2);
    l->set_count_t(2);
    l->set_count_u(2);
    for (int i = 0; i < 24; ++i) l->add_displacements(0);
    grpc::ClientContext ctx;
    v1::DeformResponse response;
    corpus.Check("unknown mesh", server.stub().Deform(&ctx, r, &response), r,
                 {StatusCode::NOT_FOUND, "HANDLE_NOT_FOUND", "mesh.handle"});
    r.mutable_mesh()->set_handle(image_handle);
    grpc::ClientContext ctx2;
    corpus.Check("an image as the mesh", server.stub().Deform(&ctx2, r, &response), r,
                 {StatusCode::INVALID_ARGUMENT, "OBJECT_KIND_MISMATCH", "mesh.handle"});
  }
  {
    v1::DetectPedestriansRequest r;
    const Image frame = testing::RandomImage(PixelType::kU8, Extent{128, 256, 1}, 2);
    v1::Image* image = r.mutable_input()->mutable_image();
    SetImageHeader(frame.view(), image);
    image->set_data(reinterpret_cast<const char*>(frame.bytes()), frame.size_bytes());
    r.set_model("nope");
    grpc::ClientContext ctx;
    v1::DetectPedestriansResponse response;
    corpus.Check("unknown model", server.stub().DetectPedestrians(&ctx, r, &response), r,
                 {StatusCode::NOT_FOUND, "MODEL_NOT_FOUND", "model"});
    r.clear_model();
    r.set_hit_threshold(-1e9);  // every window a hit: more than max_grouped_hits
    grpc::ClientContext ctx2;
    corpus.Check("more hits than grouping takes",
                 server.stub().DetectPedestrians(&ctx2, r, &response), r,
                 {StatusCode::INVALID_ARGUMENT, "LIMIT_EXCEEDED", "hit_threshold"});
  }

  // --- Upload, Download, Release.
  const v1::Image small = Gray(8, 8);
  v1::UploadRequest first = ImageUpload(small);
  first.mutable_image()->set_data(small.data().substr(0, 32));
  corpus.Check("a chunk first", Upload(server, {Chunk("x")}), v1::UploadRequest(),
               {StatusCode::INVALID_ARGUMENT, "MESSAGE_OUT_OF_ORDER", "chunk"});
  corpus.Check("an empty first message", Upload(server, {v1::UploadRequest()}), v1::UploadRequest(),
               {StatusCode::INVALID_ARGUMENT, "FIELD_REQUIRED", "content"});
  corpus.Check("no message", Upload(server, {}), v1::UploadRequest(),
               {StatusCode::INVALID_ARGUMENT, "FIELD_REQUIRED", "content"});
  corpus.Check("a second image", Upload(server, {first, ImageUpload(small)}), first,
               {StatusCode::INVALID_ARGUMENT, "MESSAGE_OUT_OF_ORDER", "image"});
  {
    v1::UploadRequest late = Chunk(small.data().substr(32));
    late.set_ttl_seconds(5);
    corpus.Check("a TTL after the first message", Upload(server, {first, late}), late,
                 {StatusCode::INVALID_ARGUMENT, "MESSAGE_OUT_OF_ORDER", "ttl_seconds"});
  }
  corpus.Check("more bytes than declared",
               Upload(server, {first, Chunk(small.data().substr(32) + "x")}), first,
               {StatusCode::INVALID_ARGUMENT, "DATA_SIZE_MISMATCH", "chunk"});
  corpus.Check("ends early", Upload(server, {first}), first,
               {StatusCode::INVALID_ARGUMENT, "DATA_SIZE_MISMATCH", "chunk"});
  {
    const v1::UploadRequest big = ImageUpload(Gray(250, 250));
    corpus.Check("over the resident budget", Upload(server, {big}), big,
                 {StatusCode::RESOURCE_EXHAUSTED, "LIMIT_EXCEEDED", "image"});
    v1::UploadRequest long_lived = ImageUpload(small);
    long_lived.set_ttl_seconds(kMaxTtl + 1);
    corpus.Check("TTL over the maximum (upload)", Upload(server, {long_lived}), long_lived,
                 {StatusCode::INVALID_ARGUMENT, "LIMIT_EXCEEDED", "ttl_seconds"});
    v1::UploadRequest bad_mesh = mesh_upload;
    const std::uint32_t triangles[3] = {0, 1, 3};
    bad_mesh.mutable_mesh()->set_triangles(reinterpret_cast<const char*>(triangles),
                                           sizeof(triangles));
    corpus.Check("a triangle past the vertices", Upload(server, {bad_mesh}), bad_mesh,
                 {StatusCode::INVALID_ARGUMENT, "VALUE_OUT_OF_RANGE", "mesh.triangles"});
    corpus.Check("idle",
                 Upload(server, {first, Chunk("")}, nullptr, std::chrono::milliseconds(700)), first,
                 {StatusCode::DEADLINE_EXCEEDED, "IDLE_TIMEOUT", ""});
  }
  for (const auto& [name, handle, chunk_bytes, want] :
       std::vector<std::tuple<std::string, std::string, std::uint32_t, Expected>>{
           {"chunk_bytes too small",
            image_handle,
            5,
            {StatusCode::INVALID_ARGUMENT, "VALUE_OUT_OF_RANGE", "chunk_bytes"}},
           {"download an unknown handle",
            "nope",
            0,
            {StatusCode::NOT_FOUND, "HANDLE_NOT_FOUND", "handle"}},
           {"download no handle",
            "",
            0,
            {StatusCode::INVALID_ARGUMENT, "INVALID_FORMAT", "handle"}}}) {
    v1::DownloadRequest r;
    r.set_handle(handle);
    r.set_chunk_bytes(chunk_bytes);
    grpc::ClientContext ctx;
    auto reader = server.stub().Download(&ctx, r);
    v1::DownloadResponse message;
    while (reader->Read(&message)) {
    }
    corpus.Check(name, reader->Finish(), r, want);
  }
  {
    v1::ReleaseRequest r;
    r.set_handle("nope");
    grpc::ClientContext ctx;
    v1::ReleaseResponse response;
    corpus.Check("release an unknown handle", server.stub().Release(&ctx, r, &response), r,
                 {StatusCode::NOT_FOUND, "HANDLE_NOT_FOUND", "handle"});
  }

  // --- ProcessVolumeStream: the stream's order and its bytes.
  const v1::VolumeStreamRequest header = GradientHeader(8, 8, 4);
  v1::VolumeStreamRequest empty;
  corpus.Check("a slab first", VolumeStream(server, {Slab(64)}), header,
               {StatusCode::INVALID_ARGUMENT, "MESSAGE_OUT_OF_ORDER", "header"});
  corpus.Check("no header", VolumeStream(server, {}), header,
               {StatusCode::INVALID_ARGUMENT, "FIELD_REQUIRED", "header"});
  corpus.Check("a second header", VolumeStream(server, {header, header}), header,
               {StatusCode::INVALID_ARGUMENT, "MESSAGE_OUT_OF_ORDER", "header"});
  corpus.Check("an empty message", VolumeStream(server, {header, empty}), header,
               {StatusCode::INVALID_ARGUMENT, "FIELD_REQUIRED", "content"});
  corpus.Check("not whole slices", VolumeStream(server, {header, Slab(65)}), header,
               {StatusCode::INVALID_ARGUMENT, "DATA_SIZE_MISMATCH", "slab"});
  corpus.Check("more slices than the volume", VolumeStream(server, {header, Slab(64 * 5)}), header,
               {StatusCode::INVALID_ARGUMENT, "DATA_SIZE_MISMATCH", "slab"});
  corpus.Check("ends early", VolumeStream(server, {header, Slab(64 * 3)}), header,
               {StatusCode::INVALID_ARGUMENT, "DATA_SIZE_MISMATCH", "slab"});
  {
    v1::VolumeStreamRequest bad = header;
    bad.mutable_header()->mutable_gradient()->set_kernel_length(4);
    corpus.Check(
        "a bad header", VolumeStream(server, {bad}), bad,
        {StatusCode::INVALID_ARGUMENT, "VALUE_OUT_OF_RANGE", "header.gradient.kernel_length"});
    const v1::VolumeStreamRequest huge = GradientHeader(1000, 1000, 100);
    corpus.Check("a volume over max_request_work", VolumeStream(server, {huge}), huge,
                 {StatusCode::RESOURCE_EXHAUSTED, "WORK_TOO_LARGE", ""});
  }

  // --- DetectStream: a frame's refusal names the frame message's fields.
  {
    v1::DetectFrame frame;
    frame.set_id(std::string(129, 'i'));
    *frame.mutable_request()->mutable_input()->mutable_image() = Gray(64, 128);
    corpus.Check("a long frame id", DetectStream(server, {frame}), frame,
                 {StatusCode::INVALID_ARGUMENT, "INVALID_FORMAT", "id"});
    frame.clear_id();
    v1::DetectFrame no_request;
    corpus.Check("a frame without request", DetectStream(server, {frame, no_request}), no_request,
                 {StatusCode::INVALID_ARGUMENT, "FIELD_REQUIRED", "request"});
    frame.mutable_request()->set_win_stride(12);
    corpus.Check("a bad stride", DetectStream(server, {frame}), frame,
                 {StatusCode::INVALID_ARGUMENT, "VALUE_OUT_OF_RANGE", "request.win_stride"});
    frame.mutable_request()->clear_win_stride();
    frame.mutable_request()->set_model("nope");
    corpus.Check("an unknown model", DetectStream(server, {frame}), frame,
                 {StatusCode::NOT_FOUND, "MODEL_NOT_FOUND", "request.model"});
    frame.mutable_request()->clear_model();
    frame.mutable_request()->mutable_input()->set_handle("nope");
    corpus.Check("an unknown input", DetectStream(server, {frame}), frame,
                 {StatusCode::NOT_FOUND, "HANDLE_NOT_FOUND", "request.input.handle"});
  }

  // --- Shared memory.
  testing::ShmObject shm(4096);
  ASSERT_TRUE(shm.ok());
  std::string region;
  {
    auto reg = [&](const std::string& key, std::uint64_t bytes, grpc::ClientContext* ctx,
                   v1::RegisterSharedMemoryRequest* r) {
      r->set_key(key);
      r->set_byte_size(bytes);
      v1::RegisterSharedMemoryResponse response;
      const grpc::Status status = server.stub().RegisterSharedMemory(ctx, *r, &response);
      if (status.ok()) region = response.region().handle();
      return status;
    };
    v1::RegisterSharedMemoryRequest r;
    {
      grpc::ClientContext ctx;
      corpus.Check("size 0", reg(shm.key(), 0, &ctx, &r), r,
                   {StatusCode::INVALID_ARGUMENT, "VALUE_OUT_OF_RANGE", "byte_size"});
    }
    {
      grpc::ClientContext ctx;
      corpus.Check("a key that is no name", reg("no-slash", 64, &ctx, &r), r,
                   {StatusCode::INVALID_ARGUMENT, "INVALID_FORMAT", "key"});
    }
    {
      grpc::ClientContext ctx;
      corpus.Check("no such object", reg(shm.key() + "-missing", 64, &ctx, &r), r,
                   {StatusCode::NOT_FOUND, "SHARED_MEMORY_NOT_FOUND", "key"});
    }
    {
      grpc::ClientContext ctx;
      corpus.Check("larger than the object", reg(shm.key(), 8192, &ctx, &r), r,
                   {StatusCode::INVALID_ARGUMENT, "SHARED_MEMORY_TOO_SMALL", "byte_size"});
    }
    {
      grpc::ClientContext ctx;
      corpus.Check("over the byte cap alone", reg(shm.key(), 2 << 20, &ctx, &r), r,
                   {StatusCode::RESOURCE_EXHAUSTED, "LIMIT_EXCEEDED", "byte_size"}, &ctx);
    }
    grpc::ClientContext ok_ctx;
    ASSERT_TRUE(reg(shm.key(), 4096, &ok_ctx, &r).ok());
    {
      grpc::ClientContext ctx;
      corpus.Check("registered twice", reg(shm.key(), 4096, &ctx, &r), r,
                   {StatusCode::ALREADY_EXISTS, "ALREADY_REGISTERED", "key"});
    }
  }
  {
    v1::UnregisterSharedMemoryRequest r;
    r.set_handle("nope");
    grpc::ClientContext ctx;
    v1::UnregisterSharedMemoryResponse response;
    corpus.Check("unregister an unknown region",
                 server.stub().UnregisterSharedMemory(&ctx, r, &response), r,
                 {StatusCode::NOT_FOUND, "SHARED_MEMORY_NOT_FOUND", "handle"});
  }
  {
    v1::MorphologyRequest r = Dilate(8, 8);
    v1::Image shape = r.input().image();
    shape.clear_data();
    v1::SharedMemoryImage* in = r.mutable_input()->mutable_shared_memory();
    *in->mutable_image() = shape;
    in->set_region("nope");
    grpc::ClientContext ctx;
    corpus.Check("an unknown region", Morphology(server, r, &ctx), r,
                 {StatusCode::NOT_FOUND, "SHARED_MEMORY_NOT_FOUND", "input.shared_memory.region"});
    in->set_region(region);
    in->set_offset(4096 - 63);
    grpc::ClientContext ctx2;
    corpus.Check(
        "past the region's end", Morphology(server, r, &ctx2), r,
        {StatusCode::INVALID_ARGUMENT, "SHARED_MEMORY_TOO_SMALL", "input.shared_memory.offset"});
    in->set_offset(0);
    r.mutable_output()->mutable_shared_memory()->set_region(region);
    r.mutable_output()->mutable_shared_memory()->set_offset(32);
    grpc::ClientContext ctx3;
    corpus.Check(
        "a result over its input", Morphology(server, r, &ctx3), r,
        {StatusCode::INVALID_ARGUMENT, "INVALID_COMBINATION", "output.shared_memory.offset"});
  }

  // Counted once each, under its reason, by every RPC (CallScope::Complete).
  EXPECT_EQ(RejectedByReason(server.server().registry()), corpus.counts());

  // A server without shared memory says so.
  testing::TestServer plain;
  Corpus plain_corpus;
  {
    v1::UnregisterSharedMemoryRequest r;
    r.set_handle("h");
    grpc::ClientContext ctx;
    v1::UnregisterSharedMemoryResponse response;
    plain_corpus.Check("no shared memory here",
                       plain.stub().UnregisterSharedMemory(&ctx, r, &response), r,
                       {StatusCode::FAILED_PRECONDITION, "SHARED_MEMORY_UNAVAILABLE", ""});
    v1::MorphologyRequest m = Dilate(8, 8);
    v1::Image shape = m.input().image();
    shape.clear_data();
    *m.mutable_input()->mutable_shared_memory()->mutable_image() = shape;
    m.mutable_input()->mutable_shared_memory()->set_region("r");
    grpc::ClientContext ctx2;
    plain_corpus.Check("a region on a server without shared memory", Morphology(plain, m, &ctx2), m,
                       {StatusCode::FAILED_PRECONDITION, "SHARED_MEMORY_UNAVAILABLE",
                        "input.shared_memory.region"});
  }
  EXPECT_EQ(RejectedByReason(plain.server().registry()), plain_corpus.counts());
}

}  // namespace
}  // namespace cuimg
