// Shared memory on the CUDA backend's page-locked path (skips without a GPU): a client truncating
// a registered, cudaHostRegister'ed object while a request copies from and to it. The copies are
// DMA, which does not fault; the request must still fail (FAILED_PRECONDITION naming the region and
// key), the region stay refused, unregistering it (unpinning pages the object no longer has) be
// harmless, and the server go on serving.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>

#include "server/validation/proto_conversion.h"
#include "tests/server/test_server.h"
#include "tests/testing/gpu_test_env.h"
#include "tests/testing/random_image.h"
#include "tests/testing/shm_object.h"

namespace cuimg {
namespace {

using ::cuimg::testing::ShmObject;

// `iterations` 31x31 elliptic dilations, in steps of at most 1000 (the server's limit).
void AddDilations(std::uint32_t iterations, v1::MorphologyRequest* r) {
  for (std::uint32_t done = 0; done < iterations; done += 1000) {
    v1::MorphologyStep* step = r->add_steps();
    step->set_op(v1::MORPHOLOGY_OP_DILATE);
    step->set_iterations(std::min<std::uint32_t>(1000, iterations - done));
    step->mutable_element()->set_shape(v1::ELEMENT_SHAPE_ELLIPSE);
    step->mutable_element()->set_width(31);
    step->mutable_element()->set_height(31);
  }
}

grpc::Status Call(testing::TestServer& server, const v1::MorphologyRequest& request) {
  grpc::ClientContext ctx;
  v1::MorphologyResponse response;
  return server.stub().Morphology(&ctx, request, &response);
}

TEST(SharedMemoryGpu, TruncatingAPageLockedRegionMidRequestFailsTheRequestNotTheServer) {
  CUIMG_SKIP_IF_NO_GPU();
  // Arrange: a 2048x2048 image and room for its result in one page-locked object.
  ServerOptions options = testing::TestServerOptions();
  options.backend = BackendKind::kCuda;
  options.shared_memory.enabled = true;
  // The request below is sized to run for seconds on this device, whatever its estimate.
  options.max_request_work = 0;
  absl::StatusOr<std::unique_ptr<Backend>> backend = CreateCudaBackend(options);
  ASSERT_TRUE(backend.ok()) << backend.status();
  testing::TestServer server(options, *std::move(backend));
  const Image input = testing::RandomImage(PixelType::kU8, Extent{2048, 2048, 1}, 5);
  const std::size_t bytes = input.size_bytes();
  ShmObject shm(2 * bytes);
  ASSERT_TRUE(shm.ok());
  std::memcpy(shm.data(), input.bytes(), bytes);
  v1::RegisterSharedMemoryResponse registered;
  {
    grpc::ClientContext ctx;
    v1::RegisterSharedMemoryRequest request;
    request.set_key(shm.key());
    request.set_byte_size(shm.size());
    ASSERT_TRUE(server.stub().RegisterSharedMemory(&ctx, request, &registered).ok());
  }
  ASSERT_TRUE(registered.region().device_mapped()) << "the region must be page-locked";
  v1::MorphologyRequest request;
  SetImageHeader(input.view(), request.mutable_input()->mutable_shared_memory()->mutable_image());
  request.mutable_input()->mutable_shared_memory()->set_region(registered.region().handle());
  request.mutable_output()->mutable_shared_memory()->set_region(registered.region().handle());
  request.mutable_output()->mutable_shared_memory()->set_offset(bytes);
  // Enough work for about 2 s, timed here (devices differ): the count grows until a run is long
  // enough to time, then scales.
  std::uint32_t iterations = 1;
  for (;;) {
    v1::MorphologyRequest timed = request;
    AddDilations(iterations, &timed);
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(Call(server, timed).ok());
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (took >= 0.25 || iterations >= 64000) {
      AddDilations(static_cast<std::uint32_t>(std::min(64000.0, iterations * 2.0 / took) + 1),
                   &request);
      break;
    }
    iterations *= 4;
  }

  // Act: truncate the object while the request runs.
  std::future<grpc::Status> call =
      std::async(std::launch::async, [&] { return Call(server, request); });
  const bool running = call.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout;
  ASSERT_TRUE(shm.Truncate(0));
  const grpc::Status status = call.get();

  // Assert
  ASSERT_TRUE(running) << "the request ended before the truncation";
  EXPECT_EQ(status.error_code(), grpc::FAILED_PRECONDITION) << status.error_message();
  EXPECT_NE(status.error_message().find("shared_memory.region: the shared-memory object \"" +
                                        shm.key() + "\" was shrunk"),
            std::string::npos)
      << status.error_message();
  const grpc::Status later = Call(server, request);  // the region stays refused
  EXPECT_EQ(later.error_code(), grpc::FAILED_PRECONDITION) << later.error_message();
  {
    grpc::ClientContext ctx;
    v1::UnregisterSharedMemoryRequest unregister;
    unregister.set_handle(registered.region().handle());
    v1::UnregisterSharedMemoryResponse done;
    EXPECT_TRUE(server.stub().UnregisterSharedMemory(&ctx, unregister, &done).ok());
  }
  const Image small = testing::RandomImage(PixelType::kU8, Extent{64, 48, 1}, 6);
  v1::MorphologyRequest inline_request;
  SetImageHeader(small.view(), inline_request.mutable_input()->mutable_image());
  inline_request.mutable_input()->mutable_image()->set_data(
      reinterpret_cast<const char*>(small.bytes()), small.size_bytes());
  AddDilations(1, &inline_request);
  EXPECT_TRUE(Call(server, inline_request).ok()) << "the server must go on serving";
}

}  // namespace
}  // namespace cuimg
