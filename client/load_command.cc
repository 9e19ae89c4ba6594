// `cuimg load`: drives the server with Morphology requests through the callback API: a closed loop
// of --concurrency calls in flight, or an open loop at --rate calls/s; for --duration seconds (or
// --requests calls) after --warmup. Prints throughput, latency percentiles, errors by code and the
// server's stage breakdown (from the cuimg-timing trailers); --json, --csv for machines, --report
// for people (an HTML page or PNG with a latency histogram and throughput/latency over time).
// --shm passes the pixels through a registered POSIX shared-memory object instead (same host).
#include <atomic>
#include <chrono>
#include <cstring>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <list>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "client/commands.h"
#include "client/io/image_file.h"
#include "client/load_report.h"
#include "client/load_stats.h"
#include "client/morphology_spec.h"
#include "client/shared_memory.h"
#include "cuimg/v1/imaging_service.grpc.pb.h"

namespace cuimg {
namespace {

using Clock = std::chrono::steady_clock;

int Usage(const std::string& message) {
  std::fprintf(stderr, "usage: %s\n", message.c_str());
  return kExitUsage;
}

absl::StatusOr<v1::MorphologyRequest> BuildRequest(const LoadCommand& c) {
  v1::MorphologyRequest request;
  auto steps = ParseSteps(c.steps);
  if (!steps.ok()) return steps.status();
  for (const auto& s : *steps) *request.add_steps() = s;
  v1::Image* image = request.mutable_input()->mutable_image();
  if (!c.input.empty()) {
    auto file = ReadImageFile(c.input);
    if (!file.ok()) return file.status();
    if (file->channels() != 1) return absl::InvalidArgumentError("--input: needs a 1-channel image");
    image->set_pixel_type(file->type() == PixelType::kU16 ? v1::PIXEL_TYPE_U16 : v1::PIXEL_TYPE_U8);
    image->set_width(static_cast<std::uint32_t>(file->extent().width));
    image->set_height(static_cast<std::uint32_t>(file->extent().height));
    image->set_data(reinterpret_cast<const char*>(file->bytes()), file->size_bytes());
    return request;
  }
  auto size = ParseSize(c.size);
  if (!size.ok()) return size.status();
  std::size_t pixel = 1;
  if (c.pixel_type == "u8") {
    image->set_pixel_type(v1::PIXEL_TYPE_U8);
  } else if (c.pixel_type == "u16" || c.pixel_type == "i16") {
    image->set_pixel_type(c.pixel_type == "u16" ? v1::PIXEL_TYPE_U16 : v1::PIXEL_TYPE_I16);
    pixel = 2;
  } else if (c.pixel_type == "f32") {
    image->set_pixel_type(v1::PIXEL_TYPE_F32);
    pixel = 4;
  } else {
    return absl::InvalidArgumentError("--pixel_type: expected u8, u16, i16 or f32");
  }
  image->set_width((*size)[0]);
  image->set_height((*size)[1]);
  image->set_depth((*size)[2]);
  const std::size_t bytes =
      static_cast<std::size_t>((*size)[0]) * (*size)[1] * std::max((*size)[2], 1) * pixel;
  std::string data(bytes, '\0');
  std::mt19937 rng(1);
  // Finite f32 values: random bytes of a small range in every element's low bytes.
  for (std::size_t i = 0; i < bytes; ++i) data[i] = static_cast<char>(pixel == 4 && i % 4 == 3 ? 0x3f : rng());
  image->set_data(std::move(data));
  return request;
}

// The request re-pointed at a shared-memory region holding its pixels at offset 0, one per slot:
// slot i writes its result to its own bytes after the input's.
std::vector<v1::MorphologyRequest> SharedMemoryRequests(const v1::MorphologyRequest& request,
                                                        const std::string& region, int slots) {
  const std::uint64_t bytes = request.input().image().data().size();
  v1::Image shape = request.input().image();
  shape.clear_data();
  std::vector<v1::MorphologyRequest> out;
  for (int i = 0; i < slots; ++i) {
    v1::MorphologyRequest r = request;
    v1::SharedMemoryImage* in = r.mutable_input()->mutable_shared_memory();
    in->set_region(region);
    in->set_offset(0);
    *in->mutable_image() = shape;
    r.mutable_output()->mutable_shared_memory()->set_region(region);
    r.mutable_output()->mutable_shared_memory()->set_offset(bytes * (1 + i));
    out.push_back(std::move(r));
  }
  return out;
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
  // Call i sends requests[i % size].
  LoadRun(const ConnectionOptions& connection, const LoadCommand& c,
          std::vector<v1::MorphologyRequest> requests)
      : c_(c), connection_(connection), requests_(std::move(requests)) {
    for (int i = 0; i < std::max(1, c.channels); ++i) {
      stubs_.push_back(v1::Imaging::NewStub(MakeChannel(connection, i + 1)));
    }
  }

  std::vector<CallRecord> Run() {
    t0_ = Clock::now();
    std::thread progress;
    if (c_.progress) progress = std::thread([this] { Progress(); });
    if (c_.rate > 0) {
      // Open loop: calls start on schedule whatever the latency (no coordinated omission).
      const auto interval = std::chrono::duration<double>(1.0 / c_.rate);
      for (std::int64_t i = 0; !Done(); ++i) {
        std::this_thread::sleep_until(t0_ + std::chrono::duration_cast<Clock::duration>(interval * i));
        if (Elapsed() >= StopAt() && c_.requests == 0) break;
        Issue(static_cast<int>(i));
        DestroyFinished();
      }
    } else {
      for (int w = 0; w < c_.concurrency; ++w) Issue(w);
    }
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
    }
    stopped_ = true;
    if (progress.joinable()) progress.join();
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(records_);
  }

  double measured_seconds() const { return measured_s_; }

 private:
  // One call's state, alive from Issue() until Run()'s thread destroys it after the callback.
  struct Call {
    grpc::ClientContext context;
    v1::MorphologyResponse response;
    Clock::time_point start;
    int worker = 0;
    std::list<Call>::iterator self;
  };
  // Finished calls are destroyed in batches, so that the callback threads rarely wake Run().
  static constexpr std::size_t kDestroyBatch = 64;

  double Elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }
  double StopAt() const { return c_.warmup_s + c_.duration_s; }
  std::int64_t Target() const { return c_.requests; }
  bool Done() {
    std::lock_guard<std::mutex> lock(mu_);
    return c_.requests > 0 && issued_ >= Target();
  }
  // No call will be issued any more (needs mu_).
  bool IssuingOver() const { return c_.requests > 0 ? issued_ >= Target() : Elapsed() >= StopAt(); }

  void Issue(int worker) {
    Call* call;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (IssuingOver()) return;
      ++issued_;
      ++inflight_;
      call = &calls_.emplace_back();
      call->self = std::prev(calls_.end());
    }
    call->worker = worker;
    PrepareContext(connection_, &call->context);
    call->start = Clock::now();
    v1::Imaging::Stub& stub = *stubs_[static_cast<std::size_t>(worker) % stubs_.size()];
    const v1::MorphologyRequest& request =
        requests_[static_cast<std::size_t>(worker) % requests_.size()];
    stub.async()->Morphology(&call->context, &request, &call->response,
                             [this, call](grpc::Status status) { Finish(call, status); });
  }

  // On gRPC's callback thread.
  void Finish(Call* call, const grpc::Status& status) {
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
    r.start_s = std::chrono::duration<double>(call.start - t0_).count();
    r.latency_ms = std::chrono::duration<double, std::milli>(Clock::now() - call.start).count();
    r.code = StatusCodeName(status.error_code());
    if (status.ok()) ParseTiming(ServerTiming(call.context), &r);
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
        inflight = inflight_;
      }
      std::fprintf(stderr, "\r[%6.1fs] ok %lld  errors %lld  in flight %lld   ", Elapsed(),
                   static_cast<long long>(ok), static_cast<long long>(err),
                   static_cast<long long>(inflight));
    }
    std::fprintf(stderr, "\n");
  }

  const LoadCommand c_;
  const ConnectionOptions connection_;
  const std::vector<v1::MorphologyRequest> requests_;
  std::vector<std::unique_ptr<v1::Imaging::Stub>> stubs_;
  Clock::time_point t0_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::list<Call> calls_;                           // issued, not yet destroyed
  std::vector<std::list<Call>::iterator> finished_;  // handed back by their callbacks
  std::vector<CallRecord> records_;
  std::int64_t issued_ = 0;
  std::int64_t inflight_ = 0;
  double measured_s_ = 0;
  std::atomic<bool> stopped_{false};
};

}  // namespace

int RunLoad(const ConnectionOptions& connection, const LoadCommand& c) {
  if (c.concurrency < 1 || c.channels < 1 || c.duration_s <= 0 || c.warmup_s < 0 || c.rate < 0 ||
      c.requests < 0) {
    return Usage("cuimg load: --concurrency and --channels >= 1, --duration > 0, --warmup >= 0");
  }
  if (!c.report.empty() && !IsReportPath(c.report)) {
    return Usage("--report: expected FILE.html or FILE.png");
  }
  if (auto spec = MakeChannelSpec(connection); !spec.ok()) {
    return Usage(std::string(spec.status().message()));
  }
  absl::StatusOr<v1::MorphologyRequest> request = BuildRequest(c);
  if (!request.ok()) return Usage(std::string(request.status().message()));
  std::vector<v1::MorphologyRequest> requests = {*request};
  // With --shm: the input once, then a result slot per call in flight (open loop: per call
  // index, modulo the same count), all in one object registered for the run.
  std::unique_ptr<SharedMemoryObject> shm;
  std::unique_ptr<v1::Imaging::Stub> admin;
  std::string region;
  if (c.shm) {
    const std::string& pixels = request->input().image().data();
    absl::StatusOr<std::unique_ptr<SharedMemoryObject>> object =
        SharedMemoryObject::Create(pixels.size() * (1 + c.concurrency), "load");
    if (!object.ok()) {
      std::fprintf(stderr, "error: %s\n", std::string(object.status().message()).c_str());
      return kExitRpcError;
    }
    shm = *std::move(object);
    std::memcpy(shm->data(), pixels.data(), pixels.size());
    admin = v1::Imaging::NewStub(MakeChannel(connection, 0));
    absl::StatusOr<std::string> handle = RegisterRegion(*admin, connection, *shm);
    if (!handle.ok()) {
      std::fprintf(stderr, "error: %s\n", std::string(handle.status().message()).c_str());
      return kExitRpcError;
    }
    region = *handle;
    requests = SharedMemoryRequests(*request, region, c.concurrency);
  }
  LoadRun run(connection, c, std::move(requests));
  const std::vector<CallRecord> records = run.Run();
  if (c.shm) {
    if (absl::Status s = UnregisterRegion(*admin, connection, region); !s.ok()) {
      std::fprintf(stderr, "warning: %s\n", std::string(s.message()).c_str());
    }
  }
  const double seconds = c.requests > 0 ? std::max(run.measured_seconds(), 1e-9) : c.duration_s;
  const LoadSummary summary = Summarize(records, c.warmup_s, seconds);
  const std::string config = absl::StrFormat(
      R"({"target":"%s","rpc":"morphology","steps":"%s","size":"%s","pixel_type":"%s",)"
      R"("concurrency":%d,"rate":%.3f,"duration_s":%.3f,"requests":%d,"warmup_s":%.3f,"channels":%d,)"
      R"("shm":%s})",
      connection.target, c.steps, c.input.empty() ? c.size : c.input, c.pixel_type, c.concurrency,
      c.rate, c.duration_s, c.requests, c.warmup_s, c.channels, c.shm ? "true" : "false");
  const std::string json = SummaryJson(summary, config);
  if (!c.json_out.empty()) std::ofstream(c.json_out) << json << "\n";
  const std::string csv = RecordsCsv(records, c.warmup_s);
  if (!c.csv.empty()) std::ofstream(c.csv) << csv;
  if (c.json) {
    std::printf("%s\n", json.c_str());
  } else {
    std::printf("%s", SummaryText(summary).c_str());
  }
  if (!c.report.empty()) {
    if (absl::Status s = WriteLoadReport(c.report, json, csv); !s.ok()) {
      std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
      return kExitUsage;
    }
    if (!c.json) std::printf("report: %s\n", c.report.c_str());
  }
  return summary.ok == summary.requests && summary.requests > 0 ? kExitOk : kExitRpcError;
}

}  // namespace cuimg
