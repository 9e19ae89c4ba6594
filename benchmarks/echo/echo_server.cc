// The echo baseline: the same Debian gRPC, callback API and transport settings as cuimg-server
// (server/transport_settings.h), doing nothing but returning what it receives. Its round trip is
// the floor the service is measured against (benchmarks/transport_bench.cc).
// Flags: --listen_address, --port_file (JSON {"grpc": PORT} once listening),
// --http2_lookahead_bytes,
// --max_receive_message_bytes, --lock_order_checks (off, as in cuimg-server), --warm_cpus and
// --warm_us (CPUs kept from idling for that long after a call that arrives alone, and cooled by a
// second one in flight, with the same hold-off, as cuimg-server's --warm_cpus does, so that both
// sides of a comparison get them). Runs until SIGTERM/SIGINT.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "cuimg/common/lock_order_checks.h"
#include "echo/echo.grpc.pb.h"
#include "server/scheduling/cpu_warmer.h"
#include "server/scheduling/work_queue.h"
#include "server/transport_settings.h"

ABSL_FLAG(std::string, listen_address, "127.0.0.1:0", "Where to listen.");
ABSL_FLAG(std::string, port_file, "", "Writes {\"grpc\": PORT} here once listening.");
ABSL_FLAG(int, http2_lookahead_bytes, 0, "As cuimg-server's flag (0 = gRPC's default).");
ABSL_FLAG(int, max_receive_message_bytes, 1 << 30, "As cuimg-server's flag.");
ABSL_FLAG(int, warm_cpus, 0, "As cuimg-server's flag (-1: all, 0: off).");
ABSL_FLAG(bool, lock_order_checks, false, "As cuimg-server's flag.");
ABSL_FLAG(int, warm_us, 2000, "How long CPUs stay warm after a call (with --warm_cpus).");

namespace {

using cuimg::bench::EchoMessage;

class EchoService final : public cuimg::bench::Echo::CallbackService {
 public:
  EchoService(int warm_cpus, std::chrono::microseconds warm_for)
      : warmer_(warm_cpus != 0 ? std::make_unique<cuimg::CpuWarmer>(warm_cpus) : nullptr),
        warm_for_(warm_for) {}

 private:
  // A call counts from the handler's start until its reply is handed to gRPC, as cuimg's work
  // queue counts a request from admission until its worker has finished it: the CPUs warm only
  // for a call that arrives alone, and one that finds another cools them and holds warming off
  // (work_queue.h). Before the hold-off was mirrored here (runs 173-174), the echo kept warming
  // between its calls under load and served up to 30k calls/s with warm CPUs against ~21-25k
  // without, by a policy cuimg-server does not have.
  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* ctx, const EchoMessage* request,
                                 EchoMessage* response) override {
    if (warmer_ != nullptr) {
      if (inflight_.fetch_add(1, std::memory_order_relaxed) == 0) {
        warmer_->WarmUntil(std::chrono::steady_clock::now() + warm_for_);
      } else {
        warmer_->Cool(cuimg::WorkQueue::kWarmHoldOff);
      }
    }
    *response->mutable_data() = request->data();
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    if (warmer_ != nullptr) inflight_.fetch_sub(1, std::memory_order_relaxed);
    return reactor;
  }

  // Reads one message, writes it back, reads the next: one message in flight each way, as a
  // server that answers each slab once it has it.
  class StreamReactor final : public grpc::ServerBidiReactor<EchoMessage, EchoMessage> {
   public:
    StreamReactor() { StartRead(&message_); }
    void OnReadDone(bool ok) override {
      if (!ok) {
        Finish(grpc::Status::OK);
        return;
      }
      StartWrite(&message_);
    }
    void OnWriteDone(bool ok) override {
      if (!ok) {
        Finish(grpc::Status(grpc::StatusCode::CANCELLED, "client stopped reading"));
        return;
      }
      StartRead(&message_);
    }
    void OnDone() override { delete this; }

   private:
    EchoMessage message_;
  };

  grpc::ServerBidiReactor<EchoMessage, EchoMessage>* EchoStream(
      grpc::CallbackServerContext*) override {
    return new StreamReactor();
  }

  std::atomic<int> inflight_{0};
  const std::unique_ptr<cuimg::CpuWarmer> warmer_;
  const std::chrono::microseconds warm_for_;
};

volatile std::sig_atomic_t stop_requested = 0;
extern "C" void OnSignal(int) { stop_requested = 1; }

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  cuimg::SetLockOrderChecks(absl::GetFlag(FLAGS_lock_order_checks));
  cuimg::TransportSettings settings;
  settings.max_receive_message_bytes = absl::GetFlag(FLAGS_max_receive_message_bytes);
  settings.http2_lookahead_bytes = absl::GetFlag(FLAGS_http2_lookahead_bytes);
  EchoService service(absl::GetFlag(FLAGS_warm_cpus),
                      std::chrono::microseconds(absl::GetFlag(FLAGS_warm_us)));
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(absl::GetFlag(FLAGS_listen_address), grpc::InsecureServerCredentials(),
                           &port);
  cuimg::ApplyTransportSettings(settings, &builder);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    std::fprintf(stderr, "echo_server: could not listen on %s\n",
                 absl::GetFlag(FLAGS_listen_address).c_str());
    return 1;
  }
  if (const std::string path = absl::GetFlag(FLAGS_port_file); !path.empty()) {
    const std::string tmp = path + ".tmp";
    std::ofstream(tmp) << "{\"grpc\": " << port << "}\n";
    std::rename(tmp.c_str(), path.c_str());
  }
  std::fprintf(stderr, "echo_server listening on port %d, http2_lookahead_bytes=%d\n", port,
               settings.http2_lookahead_bytes);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  while (stop_requested == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  server->Shutdown();
  return 0;
}
