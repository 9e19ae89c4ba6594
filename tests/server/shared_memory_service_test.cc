// Shared memory through the service on the CPU backend: Morphology reading its input from a
// region and writing its result into one equals the inline request; every bad reference is
// refused naming the field; regions need the server to offer them and belong to their caller.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstring>

#include "server/validation/proto_conversion.h"
#include "tests/server/test_server.h"
#include "tests/testing/random_image.h"
#include "tests/testing/shm_object.h"

namespace cuimg {
namespace {

using ::cuimg::testing::ShmObject;

ServerOptions ShmServerOptions() {
  ServerOptions options = testing::TestServerOptions();
  options.shared_memory.enabled = true;
  options.shared_memory.max_bytes_per_identity = 1 << 20;
  return options;
}

v1::MorphologyRequest Dilate3(const ImageView& shape) {
  v1::MorphologyRequest r;
  SetImageHeader(shape, r.mutable_input()->mutable_image());
  v1::MorphologyStep* step = r.add_steps();
  step->set_op(v1::MORPHOLOGY_OP_DILATE);
  step->mutable_element()->set_shape(v1::ELEMENT_SHAPE_RECT);
  step->mutable_element()->set_width(3);
  step->mutable_element()->set_height(3);
  return r;
}

// The same request reading the image at `offset` of `region` (and writing to `out_offset` when
// out_offset >= 0).
v1::MorphologyRequest ThroughShm(v1::MorphologyRequest r, const std::string& region,
                                 std::uint64_t offset, std::int64_t out_offset = -1) {
  v1::Image shape = r.input().image();
  shape.clear_data();
  v1::SharedMemoryImage* shm = r.mutable_input()->mutable_shared_memory();
  shm->set_region(region);
  shm->set_offset(offset);
  *shm->mutable_image() = shape;
  if (out_offset >= 0) {
    r.mutable_output()->mutable_shared_memory()->set_region(region);
    r.mutable_output()->mutable_shared_memory()->set_offset(static_cast<std::uint64_t>(out_offset));
  }
  return r;
}

grpc::Status Register(testing::TestServer& server, const std::string& key, std::uint64_t bytes,
                      std::string* handle) {
  grpc::ClientContext ctx;
  v1::RegisterSharedMemoryRequest request;
  request.set_key(key);
  request.set_byte_size(bytes);
  v1::RegisterSharedMemoryResponse response;
  grpc::Status s = server.stub().RegisterSharedMemory(&ctx, request, &response);
  *handle = response.region().handle();
  return s;
}

grpc::Status Call(testing::TestServer& server, const v1::MorphologyRequest& request,
                  v1::MorphologyResponse* response) {
  grpc::ClientContext ctx;
  return server.stub().Morphology(&ctx, request, response);
}

TEST(SharedMemoryService, MorphologyThroughSharedMemoryEqualsInline) {
  // Arrange: the image at an odd offset, the result to go after it.
  testing::TestServer server(ShmServerOptions());
  const Image input = testing::RandomImage(PixelType::kU8, Extent{64, 48, 1}, 3);
  const std::size_t bytes = input.size_bytes();
  ShmObject shm(2 * bytes + 101);
  ASSERT_TRUE(shm.ok());
  std::memcpy(shm.data() + 101, input.bytes(), bytes);
  std::string region;
  ASSERT_TRUE(Register(server, shm.key(), shm.size(), &region).ok());
  v1::MorphologyRequest inline_request = Dilate3(input.view());
  inline_request.mutable_input()->mutable_image()->set_data(
      reinterpret_cast<const char*>(input.bytes()), bytes);
  v1::MorphologyResponse expected;
  ASSERT_TRUE(Call(server, inline_request, &expected).ok());

  // Act: input from the region, result inline; then input and result in the region.
  v1::MorphologyResponse in_only;
  const grpc::Status s1 = Call(server, ThroughShm(inline_request, region, 101), &in_only);
  v1::MorphologyResponse both;
  const grpc::Status s2 = Call(server, ThroughShm(inline_request, region, 101, 101 + bytes), &both);

  // Assert
  ASSERT_TRUE(s1.ok()) << s1.error_message();
  EXPECT_EQ(in_only.result().image().data(), expected.result().image().data());
  ASSERT_TRUE(s2.ok()) << s2.error_message();
  EXPECT_TRUE(both.result().image().data().empty());
  EXPECT_EQ(both.result().image().width(), 64u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(shm.data()) + 101 + bytes, bytes),
            expected.result().image().data());
}

TEST(SharedMemoryService, BadReferencesAreRefusedNamingTheField) {
  testing::TestServer server(ShmServerOptions());
  const Image input = testing::RandomImage(PixelType::kU8, Extent{16, 16, 1}, 4);
  ShmObject shm(1000);
  ASSERT_TRUE(shm.ok());
  std::string region;
  ASSERT_TRUE(Register(server, shm.key(), 1000, &region).ok());
  const v1::MorphologyRequest base = Dilate3(input.view());
  struct Row {
    v1::MorphologyRequest request;
    grpc::StatusCode code;
    std::string field;
  };
  std::vector<Row> rows;
  rows.push_back(
      {ThroughShm(base, region, 1000 - 255), grpc::INVALID_ARGUMENT, "input.shared_memory.offset"});
  rows.push_back({ThroughShm(base, region, ~std::uint64_t{0}), grpc::INVALID_ARGUMENT,
                  "input.shared_memory.offset"});
  rows.push_back({ThroughShm(base, "shm-nope", 0), grpc::NOT_FOUND, "input.shared_memory.region"});
  rows.push_back({ThroughShm(base, "", 0), grpc::INVALID_ARGUMENT, "input.shared_memory.region"});
  rows.push_back({ThroughShm(base, region, 0, 1000 - 255), grpc::INVALID_ARGUMENT,
                  "output.shared_memory.offset"});
  rows.push_back({ThroughShm(base, region, 0, 100), grpc::INVALID_ARGUMENT,
                  "output.shared_memory.offset: the result's bytes overlap"});
  rows.push_back(
      {ThroughShm(base, region, 0), grpc::INVALID_ARGUMENT, "input.shared_memory.image.data"});
  rows.back().request.mutable_input()->mutable_shared_memory()->mutable_image()->set_data("x");
  rows.push_back(
      {ThroughShm(base, region, 0), grpc::INVALID_ARGUMENT, "input.shared_memory.image.width"});
  rows.back().request.mutable_input()->mutable_shared_memory()->mutable_image()->set_width(0);
  rows.push_back({ThroughShm(base, region, 0, 300), grpc::INVALID_ARGUMENT,
                  "output.shared_memory: not with keep_resident"});
  rows.back().request.mutable_output()->set_keep_resident(true);
  for (const Row& row : rows) {
    v1::MorphologyResponse response;
    const grpc::Status s = Call(server, row.request, &response);
    EXPECT_EQ(s.error_code(), row.code) << row.field << ": " << s.error_message();
    EXPECT_NE(s.error_message().find(row.field), std::string::npos)
        << row.field << ": " << s.error_message();
  }
  // Gradient cannot write to shared memory.
  v1::GradientRequest gradient;
  *gradient.mutable_input() = ThroughShm(base, region, 0).input();
  gradient.mutable_output()->mutable_shared_memory()->set_region(region);
  grpc::ClientContext ctx;
  v1::GradientResponse response;
  const grpc::Status s = server.stub().Gradient(&ctx, gradient, &response);
  EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("output.shared_memory: Gradient"), std::string::npos)
      << s.error_message();
}

TEST(SharedMemoryService, RegisterListUnregister) {
  testing::TestServer server(ShmServerOptions());
  ShmObject shm(4096);
  ASSERT_TRUE(shm.ok());
  std::string region;
  ASSERT_TRUE(Register(server, shm.key(), 4096, &region).ok());
  std::string ignored;
  EXPECT_EQ(Register(server, shm.key(), 4097, &ignored).error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_EQ(Register(server, "/cuimg-test-missing", 1, &ignored).error_code(), grpc::NOT_FOUND);
  EXPECT_EQ(Register(server, shm.key(), 2 << 20, &ignored).error_code(),
            grpc::RESOURCE_EXHAUSTED);  // over 1 MiB per identity (and the object)
  {
    grpc::ClientContext ctx;
    v1::ListSharedMemoryResponse list;
    ASSERT_TRUE(server.stub().ListSharedMemory(&ctx, {}, &list).ok());
    ASSERT_EQ(list.regions_size(), 1);
    EXPECT_EQ(list.regions(0).handle(), region);
    EXPECT_EQ(list.regions(0).key(), shm.key());
    EXPECT_EQ(list.used_bytes(), 4096u);
    EXPECT_EQ(list.budget_bytes(), 1u << 20);
  }
  v1::UnregisterSharedMemoryRequest unregister;
  unregister.set_handle(region);
  v1::UnregisterSharedMemoryResponse done;
  {
    grpc::ClientContext ctx;
    EXPECT_TRUE(server.stub().UnregisterSharedMemory(&ctx, unregister, &done).ok());
  }
  {
    grpc::ClientContext ctx;
    EXPECT_EQ(server.stub().UnregisterSharedMemory(&ctx, unregister, &done).error_code(),
              grpc::NOT_FOUND);
  }
  const Image input = testing::RandomImage(PixelType::kU8, Extent{8, 8, 1}, 4);
  v1::MorphologyResponse response;
  EXPECT_EQ(Call(server, ThroughShm(Dilate3(input.view()), region, 0), &response).error_code(),
            grpc::NOT_FOUND);
}

TEST(SharedMemoryService, AServerWithoutSharedMemoryRefusesIt) {
  testing::TestServer server;  // --shared_memory off
  ShmObject shm(4096);
  ASSERT_TRUE(shm.ok());
  std::string region;
  const grpc::Status s = Register(server, shm.key(), 4096, &region);
  EXPECT_EQ(s.error_code(), grpc::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("--shared_memory"), std::string::npos);
  const Image input = testing::RandomImage(PixelType::kU8, Extent{8, 8, 1}, 4);
  v1::MorphologyResponse response;
  const grpc::Status m = Call(server, ThroughShm(Dilate3(input.view()), "shm-x", 0), &response);
  EXPECT_EQ(m.error_code(), grpc::FAILED_PRECONDITION);
  EXPECT_NE(m.error_message().find("input.shared_memory.region"), std::string::npos);
}

}  // namespace
}  // namespace cuimg
