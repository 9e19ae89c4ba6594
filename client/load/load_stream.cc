#include "client/load/load_stream.h"

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

namespace cuimg {
namespace {

// A frame waiting to be sent or answered: the load run's call.
struct Pending {
  int payload = 0;
  google::protobuf::Message* response = nullptr;
  std::function<void(grpc::Status)> done;
};

// One DetectStream: a thread sends the frames queued by Start, another takes the results (in
// order) and ends the calls. `done` runs on the reader thread, outside the lock (it may queue the
// next frame).
class FrameStream {
 public:
  FrameStream(v1::Imaging::Stub& stub, const std::vector<v1::DetectFrame>& frames)
      : frames_(frames), stream_(stub.DetectStream(&context_)) {
    writer_ = std::thread([this] { Write(); });
    reader_ = std::thread([this] { Read(); });
  }
  // Half-closes, then waits for the server to end the stream.
  ~FrameStream() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
    }
    cv_.notify_all();
    writer_.join();
    reader_.join();
  }

  // Ends the stream: its unanswered frames fail with CANCELLED. Thread-safe.
  void Cancel() { context_.TryCancel(); }

  // False once the stream has ended: the caller opens another.
  bool Send(Pending pending) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ended_) return false;
      to_send_.push_back(std::move(pending));
    }
    cv_.notify_all();
    return true;
  }

 private:
  void Write() {
    for (;;) {
      Pending next;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return closing_ || ended_ || !to_send_.empty(); });
        if (ended_ || to_send_.empty()) break;
        next = std::move(to_send_.front());
        to_send_.pop_front();
        unanswered_.push_back(next);
      }
      if (!stream_->Write(frames_[static_cast<std::size_t>(next.payload)])) break;
    }
    stream_->WritesDone();
    {
      std::lock_guard<std::mutex> lock(mu_);
      writer_done_ = true;
    }
    cv_.notify_all();
  }

  void Read() {
    v1::DetectFrameResult result;
    while (stream_->Read(&result)) {
      Pending answered;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (unanswered_.empty()) break;  // a result for no frame: the server is wrong
        answered = std::move(unanswered_.front());
        unanswered_.pop_front();
      }
      answered.response->CopyFrom(result);
      answered.done(grpc::Status::OK);
    }
    std::deque<Pending> failed;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ended_ = true;
    }
    cv_.notify_all();
    {
      // Finish may not overlap a Write; once the stream has ended, the writer stops at once.
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return writer_done_; });
    }
    grpc::Status status = stream_->Finish();
    if (status.ok()) {
      status = grpc::Status(grpc::StatusCode::INTERNAL, "the stream ended with frames unanswered");
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      failed.swap(unanswered_);
      for (Pending& p : to_send_) failed.push_back(std::move(p));
      to_send_.clear();
    }
    for (Pending& p : failed) p.done(status);
  }

  const std::vector<v1::DetectFrame>& frames_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::DetectFrame, v1::DetectFrameResult>> stream_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> to_send_;
  std::deque<Pending> unanswered_;
  bool closing_ = false;
  bool ended_ = false;
  bool writer_done_ = false;
  std::thread writer_;
  std::thread reader_;
};

class DetectStreamLoad final : public LoadRpc {
 public:
  DetectStreamLoad(Payload payload, std::vector<v1::DetectPedestriansRequest> requests)
      : LoadRpc(std::move(payload)) {
    for (v1::DetectPedestriansRequest& r : requests) {
      frames_.emplace_back().mutable_request()->Swap(&r);
    }
  }
  // Every stream is closed here, after the run (no frame is unanswered then).
  ~DetectStreamLoad() override {
    std::map<const v1::Imaging::Stub*, std::unique_ptr<FrameStream>> streams;
    std::vector<std::unique_ptr<FrameStream>> ended;
    {
      std::lock_guard<std::mutex> lock(mu_);
      streams.swap(streams_);
      ended.swap(ended_);
    }
  }

  std::unique_ptr<google::protobuf::Message> NewResponse() const override {
    return std::make_unique<v1::DetectFrameResult>();
  }
  int PayloadFor(int, std::int64_t call) const override {
    return static_cast<int>(call % static_cast<std::int64_t>(frames_.size()));
  }
  void Start(v1::Imaging::Stub& stub, int payload, grpc::ClientContext*,
             google::protobuf::Message* response,
             std::function<void(grpc::Status)> done) const override {
    Pending pending{payload, response, std::move(done)};
    std::lock_guard<std::mutex> lock(mu_);
    std::unique_ptr<FrameStream>& stream = streams_[&stub];
    if (stream == nullptr || !stream->Send(pending)) {
      // A stream that ended is kept until the end (its reader thread may be the caller).
      if (stream != nullptr) ended_.push_back(std::move(stream));
      stream = std::make_unique<FrameStream>(stub, frames_);
      stream->Send(std::move(pending));
    }
  }
  std::size_t request_bytes() const override {
    std::size_t total = 0;
    for (const v1::DetectFrame& f : frames_) total += f.ByteSizeLong();
    return total / frames_.size();
  }
  std::string ServerTimingOf(const grpc::ClientContext&,
                             const google::protobuf::Message& response) const override {
    return static_cast<const v1::DetectFrameResult&>(response).timing();
  }
  void CancelShared() const override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [stub, stream] : streams_) stream->Cancel();
  }

 private:
  std::vector<v1::DetectFrame> frames_;
  mutable std::mutex mu_;
  mutable std::map<const v1::Imaging::Stub*, std::unique_ptr<FrameStream>> streams_;
  mutable std::vector<std::unique_ptr<FrameStream>> ended_;
};

}  // namespace

std::unique_ptr<LoadRpc> MakeDetectStreamLoad(LoadRpc::Payload payload,
                                              std::vector<v1::DetectPedestriansRequest> requests) {
  return std::make_unique<DetectStreamLoad>(std::move(payload), std::move(requests));
}

}  // namespace cuimg
