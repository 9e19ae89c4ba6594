// The RPC that `cuimg load` drives, with its request built once from files or generated data.
#ifndef CUIMG_CLIENT_LOAD_RPC_H_
#define CUIMG_CLIENT_LOAD_RPC_H_

#include <google/protobuf/message.h>
#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "client/commands/commands.h"
#include "cuimg/v1/imaging_service.grpc.pb.h"

namespace cuimg {

// One unary RPC with a fixed request; Start() may run on several threads at once.
class LoadRpc {
 public:
  // What the request carries, as (key, value) entries for the run's configuration.
  using Payload = std::vector<std::pair<std::string, std::string>>;

  virtual ~LoadRpc() = default;
  // A response message for one call.
  virtual std::unique_ptr<google::protobuf::Message> NewResponse() const = 0;
  // Which request (payload index) the call number `call` of `slot` (the closed loop's worker,
  // the open loop's call index) sends: calls cycle through the requests of --input=DIR or
  // --video, while a --shm slot keeps its own result region.
  virtual int PayloadFor(int slot, std::int64_t call) const = 0;
  // Starts one call sending request `payload` (from PayloadFor); `done` runs on a gRPC thread
  // when it ends. `context` and `response` (from NewResponse()) must outlive `done`'s start.
  virtual void Start(v1::Imaging::Stub& stub, int payload, grpc::ClientContext* context,
                     google::protobuf::Message* response,
                     std::function<void(grpc::Status)> done) const = 0;
  // The mean serialized request size over the requests.
  virtual std::size_t request_bytes() const = 0;
  // The server's time breakdown of a call that succeeded, in the `cuimg-timing` format: its
  // trailer (a stream's frame carries its own in the response).
  virtual std::string ServerTimingOf(const grpc::ClientContext& context,
                                     const google::protobuf::Message& response) const;
  // Cancels what the calls share beyond their own contexts (the caller cancels those), so that
  // every started call ends soon: the frame streams of --detect_stream. Thread-safe.
  virtual void CancelShared() const {}

  const Payload& payload() const { return payload_; }

 protected:
  explicit LoadRpc(Payload payload) : payload_(std::move(payload)) {}

 private:
  Payload payload_;
};

// The requests of `command.rpc` (morphology, gradient, pyramid, detect or deform) from its
// payload options: --input or a generated --image_size/--pixel_type image for the image RPCs
// (detect sends a PNG/JPEG --input encoded, as `cuimg detect` does), the torus or a mesh file and
// a lattice for deform. For the image RPCs, --input=DIR gives one request per image file in the
// folder (sorted by name; a folder without any is read as a DICOM series volume), --video=FILE
// one per decoded frame (--every, --max_frames; at most kMaxVideoFrames without the latter).
// INVALID_ARGUMENT naming the flag for a bad choice or payload.
//
// With --shm (morphology only), `shared_memory` turns the request into one request per slot
// whose pixels travel through a registered region; slot i sends requests[i % count].
inline constexpr int kMaxVideoFrames = 100;
using SharedMemoryRewrite =
    std::function<absl::StatusOr<std::vector<v1::MorphologyRequest>>(const v1::MorphologyRequest&)>;
absl::StatusOr<std::unique_ptr<LoadRpc>> MakeLoadRpc(const LoadCommand& command,
                                                     const SharedMemoryRewrite& shared_memory);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_LOAD_RPC_H_
