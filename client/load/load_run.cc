#include "client/load/load_run.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <iterator>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/strings/str_format.h"
#include "cuimg/v1/imaging_service.grpc.pb.h"
#include "proto/wire_contract.h"

namespace cuimg {
namespace {

using Clock = std::chrono::steady_clock;

// The signal that asked the run to stop (0: none). Set by the handler, which may do nothing else.
std::atomic<int> g_stop_signal{0};

void OnStopSignal(int signal) { g_stop_signal.store(signal); }

// SIGINT and SIGTERM set g_stop_signal while this lives. SA_RESETHAND: a second signal acts as it
// would have without the handler (a user pressing Ctrl-C twice means it).
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal.store(0);
    struct sigaction action {};
    action.sa_handler = OnStopSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// The message as one line of at most kMessageChars bytes: control characters escaped (a message
// may carry a client's own text back, newlines included), cut at a UTF-8 character boundary.
std::string PrintableMessage(const std::string& message) {
  std::string out;
  for (unsigned char ch : message) {
    if (ch == '\n') {
      out += "\\n";
    } else if (ch < 0x20 || ch == 0x7f) {
      out += absl::StrFormat("\\x%02x", ch);
    } else {
      out += static_cast<char>(ch);
    }
  }
  if (out.size() <= kMessageChars) return out;
  std::size_t cut = kMessageChars;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xc0) == 0x80) --cut;
  return out.substr(0, cut) + "…";
}

// Drives the calls. Threads: Run() on the caller's (main) thread issues calls (all of them in the
// open loop, the first --concurrency in the closed loop) and destroys finished ones; gRPC's
// callback threads record results and, in the closed loop, issue the next call.
//
// Every gRPC object is released on the caller's thread: a call's context holds a reference to
// its channel, and when the last channel reference drops on gRPC's callback thread, the channel
// releases the callback completion queue that thread is polling (gRPC 1.51 then aborts with
// "ref_counted.h: prior > 0"). So a Call is owned here, never by its callback; the callback
// only hands it back, and Run() returns after every call has been handed back and destroyed.
class LoadRun {
 public:
  LoadRun(const ConnectionOptions& connection, const LoadCommand& c, const LoadRpc& rpc)
      : c_(c), connection_(connection), rpc_(rpc) {
    for (int i = 0; i < std::max(1, c.channels); ++i) {
      stubs_.push_back(v1::Imaging::NewStub(MakeChannel(connection, i + 1)));
    }
  }

  std::vector<CallRecord> Run() {
    const StopSignals signals;
    t0_ = Clock::now();
    std::thread progress;
    if (c_.progress) progress = std::thread([this] { Progress(); });
    if (c_.rate > 0) {
      // Open loop: calls start on schedule whatever the latency (no coordinated omission).
      const auto interval = std::chrono::duration<double>(1.0 / c_.rate);
      for (std::int64_t i = 0; !Done(); ++i) {
        const Clock::time_point due =
            t0_ + std::chrono::duration_cast<Clock::duration>(interval * i);
        // In slices, so that a signal is seen within 100 ms whatever the rate.
        while (Clock::now() < due && !CheckStop()) {
          std::this_thread::sleep_until(
              std::min(due, Clock::now() + std::chrono::milliseconds(100)));
        }
        if (CheckStop() || (Elapsed() >= StopAt() && c_.requests == 0)) break;
        Issue(static_cast<int>(i));
        DestroyFinished();
      }
    } else {
      for (int w = 0; w < c_.concurrency; ++w) Issue(w);
    }
    bool cancelled = false;
    for (;;) {
      bool over;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(100), [this] {
          return finished_.size() >= kDestroyBatch || (IssuingOver() && inflight_ == 0);
        });
        over = IssuingOver() && inflight_ == 0;
      }
      DestroyFinished();
      if (over) break;
      if (CheckStop() && !cancelled && Elapsed() - stopped_at_s_ >= kStopGraceSeconds) {
        CancelInFlight();
        cancelled = true;
      }
    }
    stopped_ = true;
    if (progress.joinable()) progress.join();
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(records_);
  }

  double measured_seconds() const { return measured_s_; }
  int stopped_by() const { return stopped_by_; }
  double stopped_at_s() const { return stopped_at_s_; }
  std::int64_t abandoned() const { return abandoned_; }

 private:
  // One call's state, alive from Issue() until Run()'s thread destroys it after the callback.
  struct Call {
    grpc::ClientContext context;
    std::unique_ptr<google::protobuf::Message> response;
    Clock::time_point start;
    int worker = 0;
    int payload = 0;
    bool warmup = false;
    std::list<Call>::iterator self;
  };
  // Finished calls are destroyed in batches, so that the callback threads rarely wake Run().
  static constexpr std::size_t kDestroyBatch = 64;

  double Elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }
  double StopAt() const { return c_.warmup_s + c_.duration_s; }
  // --requests counts the calls after the warm-up: the warm-up runs its --warmup seconds first,
  // so a short --requests run is never swallowed by it.
  bool Done() {
    std::lock_guard<std::mutex> lock(mu_);
    return c_.requests > 0 && measured_issued_ >= c_.requests;
  }
  // No call will be issued any more (needs mu_).
  bool IssuingOver() const {
    if (stopping_) return true;
    return c_.requests > 0 ? measured_issued_ >= c_.requests : Elapsed() >= StopAt();
  }

  // True once a stop signal has arrived; the first look after it stops issuing and says so.
  bool CheckStop() {
    const int signal = g_stop_signal.load();
    if (signal == 0) return false;
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      stopping_ = true;
      stopped_by_ = signal;
      stopped_at_s_ = Elapsed();
      std::fprintf(stderr,
                   "\n%s: stopping; waiting up to %.0f s for the %lld calls in flight, then "
                   "writing the summary and reports of the %.1f s run\n",
                   signal == SIGINT ? "SIGINT" : "SIGTERM", kStopGraceSeconds,
                   static_cast<long long>(running_), stopped_at_s_);
    }
    return true;
  }

  // After the grace period: every call still in flight is cancelled; they end as CANCELLED, and
  // Record leaves them out (the run, not the server, ended them).
  void CancelInFlight() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelling_ = true;
      for (Call& call : calls_) call.context.TryCancel();
    }
    rpc_.CancelShared();
  }

  void Issue(int worker) {
    Call* call;
    std::int64_t index;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (IssuingOver()) return;
      index = issued_++;
      ++inflight_;
      call = &calls_.emplace_back();
      call->self = std::prev(calls_.end());
      // The start decides warm-up or measured, here under the lock, so that exactly --requests
      // measured calls are issued.
      call->start = Clock::now();
      call->warmup = std::chrono::duration<double>(call->start - t0_).count() < c_.warmup_s;
      if (!call->warmup) ++measured_issued_;
      ++running_;
    }
    call->worker = worker;
    call->payload = rpc_.PayloadFor(worker, index);
    call->response = rpc_.NewResponse();
    PrepareContext(connection_, &call->context);
    v1::Imaging::Stub& stub = *stubs_[static_cast<std::size_t>(worker) % stubs_.size()];
    rpc_.Start(stub, call->payload, &call->context, call->response.get(),
               [this, call](grpc::Status status) { Finish(call, status); });
  }

  // On gRPC's callback thread.
  void Finish(Call* call, const grpc::Status& status) {
    {
      // Before the next call is issued: the progress line's count never exceeds --concurrency.
      std::lock_guard<std::mutex> lock(mu_);
      --running_;
    }
    Record(*call, status);
    if (c_.rate <= 0) Issue(call->worker);  // closed loop: next call
    // Last touch of `call` and of this object: Run() may destroy both right after.
    std::lock_guard<std::mutex> lock(mu_);
    finished_.push_back(call->self);
    --inflight_;
    if (finished_.size() >= kDestroyBatch || inflight_ == 0) cv_.notify_all();
  }

  // Destroys, on the calling thread, the calls whose callbacks have handed them back.
  void DestroyFinished() {
    std::list<Call> done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (std::list<Call>::iterator it : finished_) done.splice(done.end(), calls_, it);
      finished_.clear();
    }
    // `done` and its calls go here, outside the lock.
  }

  void Record(const Call& call, const grpc::Status& status) {
    CallRecord r;
    // Whole microseconds, as the CSV writes them: a call then falls in the same per-second
    // window in the summary as in the CSV (a start at 6.9999996 s printed as 7.000000 did not).
    r.start_s =
        std::round(std::chrono::duration<double, std::micro>(call.start - t0_).count()) / 1e6;
    r.latency_ms = std::chrono::duration<double, std::milli>(Clock::now() - call.start).count();
    r.warmup = call.warmup;
    r.payload = call.payload;
    r.code = StatusCodeName(status.error_code());
    if (status.error_code() == grpc::StatusCode::CANCELLED) {
      std::lock_guard<std::mutex> lock(mu_);
      if (cancelling_) {
        ++abandoned_;
        return;
      }
    }
    if (status.ok()) {
      r.server = ParseTimingTrailer(rpc_.ServerTimingOf(call.context, *call.response));
    } else {
      r.message = PrintableMessage(status.error_message());
    }
    std::lock_guard<std::mutex> lock(mu_);
    records_.push_back(r);
    measured_s_ = std::max(measured_s_, Elapsed() - c_.warmup_s);
  }

  void Progress() {
    while (!stopped_) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      std::int64_t ok = 0;
      std::int64_t err = 0;
      std::int64_t inflight = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (const CallRecord& r : records_) (r.code == "OK" ? ok : err)++;
        inflight = running_;
      }
      std::fprintf(stderr, "\r[%6.1fs] ok %lld  errors %lld  in flight %lld   ", Elapsed(),
                   static_cast<long long>(ok), static_cast<long long>(err),
                   static_cast<long long>(inflight));
    }
    std::fprintf(stderr, "\n");
  }

  const LoadCommand c_;
  const ConnectionOptions connection_;
  const LoadRpc& rpc_;
  std::vector<std::unique_ptr<v1::Imaging::Stub>> stubs_;
  Clock::time_point t0_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::list<Call> calls_;                            // issued, not yet destroyed
  std::vector<std::list<Call>::iterator> finished_;  // handed back by their callbacks
  std::vector<CallRecord> records_;
  std::int64_t issued_ = 0;
  std::int64_t measured_issued_ = 0;
  std::int64_t inflight_ = 0;  // issued, not yet handed back for destruction
  std::int64_t running_ = 0;   // issued, not yet finished: what the progress line shows
  bool stopping_ = false;      // a signal stopped the run: no more calls
  bool cancelling_ = false;    // the grace period is over: calls in flight were cancelled
  int stopped_by_ = 0;
  double stopped_at_s_ = 0;
  std::int64_t abandoned_ = 0;
  double measured_s_ = 0;
  std::atomic<bool> stopped_{false};
};

}  // namespace

LoadRunResult RunLoadCalls(const ConnectionOptions& connection, const LoadCommand& command,
                           const LoadRpc& rpc) {
  LoadRun run(connection, command, rpc);
  LoadRunResult result;
  result.records = run.Run();
  result.measured_seconds = run.measured_seconds();
  result.stopped_by = run.stopped_by();
  result.stopped_at_s = run.stopped_at_s();
  result.abandoned = run.abandoned();
  return result;
}

}  // namespace cuimg
