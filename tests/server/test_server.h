// An in-process cuimg server on 127.0.0.1 (CPU backend unless a backend is given) and a stub to it.
#ifndef CUIMG_TESTS_SERVER_TEST_SERVER_H_
#define CUIMG_TESTS_SERVER_TEST_SERVER_H_

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "cuimg/common/image.h"
#include "cuimg/v1/imaging_service.grpc.pb.h"
#include "server/grpc_server.h"
#include "server/validation/proto_conversion.h"

namespace cuimg::testing {

// A Morphology request: `image` inline, one dilation by a size x size ellipse.
inline v1::MorphologyRequest DilateRequest(const Image& image, int size) {
  v1::MorphologyRequest r;
  v1::Image* in = r.mutable_input()->mutable_image();
  SetImageHeader(image.view(), in);
  in->set_data(reinterpret_cast<const char*>(image.bytes()), image.size_bytes());
  v1::MorphologyStep* step = r.add_steps();
  step->set_op(v1::MORPHOLOGY_OP_DILATE);
  step->mutable_element()->set_shape(v1::ELEMENT_SHAPE_ELLIPSE);
  step->mutable_element()->set_width(size);
  step->mutable_element()->set_height(size);
  return r;
}

inline ServerOptions TestServerOptions() {
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.metrics_address = "127.0.0.1:0";
  options.worker_threads = 2;
  options.cpu_threads_per_request = 1;
#ifdef CUIMG_SOURCE_MODELS_DIR
  options.models_dir = CUIMG_SOURCE_MODELS_DIR;
#endif
  return options;
}

class TestServer {
 public:
  explicit TestServer(const ServerOptions& options = TestServerOptions(),
                      std::unique_ptr<Backend> backend = nullptr) {
    if (backend == nullptr) backend = CreateCpuBackend(options);
    auto server = CuimgServer::Start(options, std::move(backend));
    EXPECT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    channel_ = grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", server_->grpc_port()),
                                         grpc::InsecureChannelCredentials(), args);
    stub_ = v1::Imaging::NewStub(channel_);
  }

  CuimgServer& server() { return *server_; }
  v1::Imaging::Stub& stub() { return *stub_; }
  std::shared_ptr<grpc::Channel> channel() { return channel_; }

 private:
  std::unique_ptr<CuimgServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Imaging::Stub> stub_;
};

// The unary Morphology result of `steps` (a request without input) on `volume`, sent inline.
inline std::string UnaryMorphology(v1::Imaging::Stub& stub, const Image& volume,
                                   const v1::MorphologyRequest& steps) {
  v1::MorphologyRequest r = steps;
  v1::Image* in = r.mutable_input()->mutable_image();
  SetImageHeader(volume.view(), in);
  in->set_data(reinterpret_cast<const char*>(volume.bytes()), volume.size_bytes());
  grpc::ClientContext ctx;
  v1::MorphologyResponse response;
  const grpc::Status status = stub.Morphology(&ctx, r, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response.result().image().data();
}

}  // namespace cuimg::testing

#endif  // CUIMG_TESTS_SERVER_TEST_SERVER_H_
