// LiveCalls: the calls the service has let in (ImagingService::AuthorizeCall) and gRPC still
// holds, so that shutdown can wait for them before it calls grpc::Server::Shutdown.
//
// Why before: once gRPC has sent its final GOAWAY it closes a connection the moment the
// connection's last call ends, right behind that call's response. A client still reading a large
// response (a loaded host, a slow link) then sends a WINDOW_UPDATE or a BDP ping into the closed
// socket; the kernel answers with a reset and drops the response's unsent bytes, and the client
// gets UNAVAILABLE "Connection reset by peer" for a call the server finished. Drained first, the
// responses are ahead of GOAWAY's ping in every stream: the connection closes only after the client
// has read past them.
#ifndef CUIMG_SERVER_RPC_LIVE_CALLS_H_
#define CUIMG_SERVER_RPC_LIVE_CALLS_H_

#include <condition_variable>
#include <mutex>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace cuimg {

class LiveCalls {
 public:
  // One call's place, released when it is destroyed: with the call's scope (CallScope), which
  // lives until gRPC's OnDone (the response handed to the kernel) in every reactor but the
  // default one of the calls answered at once, whose small answer is written before the handler
  // returns.
  class Hold {
   public:
    Hold() = default;
    Hold(Hold&& other) noexcept : calls_(other.calls_) { other.calls_ = nullptr; }
    Hold& operator=(Hold&& other) noexcept;
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold() { Release(); }

   private:
    friend class LiveCalls;
    explicit Hold(LiveCalls* calls) : calls_(calls) {}
    void Release();
    LiveCalls* calls_ = nullptr;
  };

  LiveCalls() = default;
  LiveCalls(const LiveCalls&) = delete;
  LiveCalls& operator=(const LiveCalls&) = delete;

  // A place for a new call; UNAVAILABLE (SHUTTING_DOWN) once Drain has begun: a call let in then
  // would only make the drain longer.
  absl::StatusOr<Hold> Enter();
  // Refuses new calls from now on and waits until every hold is released or `deadline` passes.
  // True when none is left. Thread-safe; later calls wait again.
  bool Drain(absl::Time deadline);
  int live() const;

 private:
  void Leave();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int live_ = 0;           // guarded by mu_
  bool draining_ = false;  // guarded by mu_
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_RPC_LIVE_CALLS_H_
