// ProcessVolumeStream: Morphology or Gradient over a volume that arrives in slabs of whole slices.
// Each output slab goes through the unary RPCs' backend call (a slab plus its z halo is a smaller
// volume; the halo is cropped from the result) as soon as the slices it needs have arrived, so
// several slabs of one stream run at once on the work queue's threads (on the CUDA backend each on
// its own leased stream: one slab's copies overlap another's kernels). Results go back in z order.
// A chain with a global step runs its steps before that one slab by slab, gathers the whole volume
// (volume_stream_whole.h), runs the rest on it once the last slab is in, and streams that result.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "cuimg/common/status_macros.h"
#include "server/rpc/imaging_service.h"
#include "server/rpc/stream_reactor.h"
#include "server/rpc/volume_stream_whole.h"
#include "server/scheduling/volume_stream_plan.h"
#include "server/scheduling/work_estimate.h"

namespace cuimg {
namespace {

// A backend call aims at this many output bytes: enough to keep a device busy, small enough that
// a few slabs are in flight at once and every result message stays small.
constexpr std::int64_t kTargetSlabBytes = 4 << 20;
// Slabs of one stream queued, running or waiting to be sent; reading stops while at the cap.
constexpr int kMaxSlabsInFlight = 4;
// Input received but not yet given to a slab, beyond the halo, before reading pauses.
constexpr std::int64_t kReadAheadBytes = 16 << 20;

// One slab message's bytes (taken over from the message, not copied), with their budget share.
struct Chunk {
  std::int64_t z_begin = 0;
  std::int64_t z_end = 0;
  std::string bytes;
  InflightBudget::Reservation held;
};

// One backend call: its window and input bytes (a view into one chunk, or a copy when the window
// spans several).
struct SlabTask {
  SlabWindow window;
  std::shared_ptr<const Chunk> source;
  std::string assembled;
  const char* input = nullptr;
  InflightBudget::Reservation held;
};

class VolumeStreamReactor final
    : public StreamReactor<v1::VolumeStreamRequest, v1::VolumeStreamResponse> {
 public:
  VolumeStreamReactor(ImagingService* service, WorkQueue* queue, grpc::CallbackServerContext* ctx)
      : StreamReactor("ProcessVolumeStream", service, ctx), queue_(queue) {
    Begin();
  }

 private:
  void MessageLocked() override {
    if (!status_.ok()) return;
    Fail(header_seen_ ? AcceptSlab() : AcceptHeader());
  }

  void InputEndedLocked() override {
    if (!header_seen_) {
      Fail(InvalidFieldError(ErrorReason::kFieldRequired, "header",
                             "the stream ended before the header"));
    } else if (received_ != job_.extent.depth) {
      Fail(InvalidFieldError(ErrorReason::kDataSizeMismatch, "slab",
                             absl::StrCat("the stream ended after ", received_, " of ",
                                          job_.extent.depth, " slices")));
    }
  }

  void WrittenLocked(bool ok) override {
    if (ok) {
      sent_bytes_ += static_cast<std::int64_t>(writing_message_->data().size());
      next_write_ += writing_message_->slices();
      --in_flight_;
    }
    writing_message_.reset();
  }

  void StopLocked(const absl::Status& status) override { Fail(status); }

  absl::Status AcceptHeader() {
    if (request_.content_case() != v1::VolumeStreamRequest::kHeader) {
      return InvalidFieldError(ErrorReason::kMessageOutOfOrder, "header",
                               "the first message must carry the header (volume and operation)");
    }
    CUIMG_ASSIGN_OR_RETURN(
        job_, ValidateVolumeStreamHeader(request_.header(), service_->options().limits));
    header_seen_ = true;
    reach_ = VolumeStreamZReach(job_);
    in_slice_bytes_ = job_.extent.SlicePixels() * static_cast<std::int64_t>(PixelSize(job_.type));
    const std::int64_t planes = job_.op == VolumeStreamJob::Op::kGradient
                                    ? 2 + job_.gradient.magnitude + job_.gradient.angle
                                    : 1;
    out_slice_bytes_ = job_.op == VolumeStreamJob::Op::kGradient
                           ? planes * job_.extent.SlicePixels() * 4
                           : in_slice_bytes_;
    max_out_slices_ = std::max<std::int64_t>(1, kTargetSlabBytes / out_slice_bytes_);
    // The whole volume's work: the slabs' halos add little, and a stream must not do in pieces
    // what one request may not.
    const double work =
        job_.op == VolumeStreamJob::Op::kGradient
            ? GradientWork(job_.extent, job_.gradient)
            : MorphologyWork(job_.extent, job_.steps, WorkModelOf(service_->backend().name()));
    CUIMG_RETURN_IF_ERROR(CheckRequestWork(work, service_->options().max_request_work));
    if (job_.op != VolumeStreamJob::Op::kMorphology) return absl::OkStatus();
    std::vector<MorphologyStep> rest;
    std::tie(local_steps_, rest) = SplitAtFirstGlobalStep(job_.steps);
    if (rest.empty()) return absl::OkStatus();
    // A global step: the whole volume is held from here on, and priced so at the header.
    CUIMG_ASSIGN_OR_RETURN(
        whole_held_, service_->budget().Reserve(
                         WholeVolumeStage::HeldBytes(job_.type, job_.extent, rest), "header"));
    whole_ = std::make_unique<WholeVolumeStage>(job_.type, job_.extent, std::move(rest));
    return absl::OkStatus();
  }

  absl::Status AcceptSlab() {
    switch (request_.content_case()) {
      case v1::VolumeStreamRequest::kSlab:
        break;
      case v1::VolumeStreamRequest::kHeader:
        return InvalidFieldError(ErrorReason::kMessageOutOfOrder, "header",
                                 "only the first message may carry the header");
      case v1::VolumeStreamRequest::CONTENT_NOT_SET:
        return InvalidFieldError(ErrorReason::kFieldRequired, "content",
                                 "messages after the header must carry slab");
    }
    const std::int64_t bytes = static_cast<std::int64_t>(request_.slab().size());
    if (bytes == 0 || bytes % in_slice_bytes_ != 0) {
      return InvalidFieldError(
          ErrorReason::kDataSizeMismatch, "slab",
          absl::StrCat(bytes,
                       " bytes is not a positive whole number of slices (one slice is "
                       "width*height*",
                       PixelSize(job_.type), " = ", in_slice_bytes_, " bytes)"));
    }
    const std::int64_t slices = bytes / in_slice_bytes_;
    if (slices > job_.extent.depth - received_) {
      return InvalidFieldError(
          ErrorReason::kDataSizeMismatch, "slab",
          absl::StrCat("the stream carries more than the volume's ", job_.extent.depth, " slices (",
                       received_, " received, this slab has ", slices, ")"));
    }
    auto chunk = std::make_shared<Chunk>();
    CUIMG_ASSIGN_OR_RETURN(chunk->held,
                           service_->budget().Reserve(static_cast<std::uint64_t>(bytes), "slab"));
    chunk->z_begin = received_;
    chunk->z_end = received_ + slices;
    chunk->bytes.swap(*request_.mutable_slab());
    received_bytes_ += bytes;
    received_ = chunk->z_end;
    chunks_.push_back(std::move(chunk));
    return absl::OkStatus();
  }

  // Hands the slab of `w` to the work queue. Its input is a view into one chunk when the window
  // lies in one, else a copy.
  absl::Status Dispatch(const SlabWindow& w) {
    auto task = std::make_shared<SlabTask>();
    task->window = w;
    const std::int64_t in_bytes = (w.in_end - w.in_begin) * in_slice_bytes_;
    const std::int64_t out_bytes = (w.out_end - w.out_begin) * out_slice_bytes_;
    for (const std::shared_ptr<const Chunk>& c : chunks_) {
      if (c->z_begin <= w.in_begin && w.in_end <= c->z_end) {
        task->source = c;
        task->input = c->bytes.data() + (w.in_begin - c->z_begin) * in_slice_bytes_;
      }
    }
    // Held while it runs: a copied input, the backend's copies of input and result, the message.
    const std::uint64_t estimate =
        static_cast<std::uint64_t>((task->source ? 0 : in_bytes) + in_bytes +
                                   (w.in_end - w.in_begin) * out_slice_bytes_ + out_bytes);
    CUIMG_ASSIGN_OR_RETURN(task->held, service_->budget().Reserve(estimate, "slab"));
    if (task->source == nullptr) {
      task->assembled.resize(static_cast<std::size_t>(in_bytes));
      for (const std::shared_ptr<const Chunk>& c : chunks_) {
        const std::int64_t lo = std::max(c->z_begin, w.in_begin);
        const std::int64_t hi = std::min(c->z_end, w.in_end);
        if (lo >= hi) continue;
        std::memcpy(task->assembled.data() + (lo - w.in_begin) * in_slice_bytes_,
                    c->bytes.data() + (lo - c->z_begin) * in_slice_bytes_,
                    static_cast<std::size_t>((hi - lo) * in_slice_bytes_));
      }
      task->input = task->assembled.data();
    }
    CUIMG_RETURN_IF_ERROR(
        queue_->Submit([this, task](WorkQueue::Admission& admission) { Run(*task, admission); }));
    ++running_;
    ++in_flight_;
    return absl::OkStatus();
  }

  // On a work queue thread, without the lock while the backend runs.
  void Run(const SlabTask& task, WorkQueue::Admission& admission) {
    bool skip;
    {
      std::lock_guard<std::mutex> lock(mu_);
      skip = !status_.ok();
      MarkStartedLocked();
    }
    StageTimes times;
    auto message = std::make_unique<v1::VolumeStreamResponse>();
    absl::Status status = skip ? absl::OkStatus() : call_.CheckAlive();
    if (!skip && status.ok()) status = Compute(task, &times, message.get());
    admission.Release();  // before Pump, which may finish the stream
    std::unique_lock<std::mutex> lock(mu_);
    --running_;
    if (!status.ok()) {
      Fail(status);
    } else if (!skip) {
      AddTimes(times);
      if (whole_ != nullptr) {
        gathered_ += task.window.out_end - task.window.out_begin;
        --in_flight_;  // nothing to send until the whole volume has run
      } else {
        const std::int64_t z = task.window.out_begin;
        ready_.emplace(z, std::move(message));
      }
    }
    Pump(std::move(lock));
  }

  void AddTimes(const StageTimes& times) {  // a slab's or the whole stage's
    StageTimes& total = call_.times();
    total.h2d_us += times.h2d_us;
    total.kernel_us += times.kernel_us;
    total.d2h_us += times.d2h_us;
    total.device = times.device;
  }

  // Every slice gathered: the rest of the chain on the whole volume, on the work queue.
  absl::Status DispatchWhole() {
    CUIMG_RETURN_IF_ERROR(
        queue_->Submit([this](WorkQueue::Admission& admission) { RunWhole(admission); }));
    whole_started_ = true;
    ++running_;
    return absl::OkStatus();
  }

  // On a work queue thread, without the lock while the backend runs (the stage is this task's
  // alone until it is done).
  void RunWhole(WorkQueue::Admission& admission) {
    StageTimes times;
    absl::Status status = call_.CheckAlive();
    absl::StatusOr<absl::optional<ResolvedImage>> marker =
        ResolveStreamMarker(*service_, call_, job_);
    if (status.ok()) status = marker.status();
    if (status.ok()) {
      const ImageView* view = marker->has_value() ? &(*marker)->view : nullptr;
      status = whole_->Run(service_->backend(), view, &times, cancel_);
    }
    if (status.ok()) {
      service_->metrics().AddPixels("ProcessVolumeStream", job_.extent.Pixels());
    }
    admission.Release();  // before Pump, which may finish the stream
    std::unique_lock<std::mutex> lock(mu_);
    --running_;
    if (!status.ok()) {
      Fail(status);
    } else {
      AddTimes(times);
      whole_done_ = true;
    }
    Pump(std::move(lock));
  }

  absl::Status Compute(const SlabTask& task, StageTimes* times, v1::VolumeStreamResponse* out) {
    const SlabWindow& w = task.window;
    const Extent window{job_.extent.width, job_.extent.height, w.in_end - w.in_begin};
    const std::int64_t slices = w.out_end - w.out_begin;
    const ImageView in{job_.type, window, 1, const_cast<char*>(task.input)};
    if (whole_ != nullptr) {
      return whole_->PlaceSlab(service_->backend(), in, local_steps_, w.out_begin - w.in_begin,
                               w.out_begin, slices, times, cancel_);
    }
    out->set_z_begin(static_cast<std::uint32_t>(w.out_begin));
    out->set_slices(static_cast<std::uint32_t>(slices));
    if (w.out_begin == 0) {
      for (const v1::StructuringElement& e : job_.resolved_elements) {
        *out->add_resolved_elements() = e;
      }
    }
    std::string* data = out->mutable_data();
    data->resize(static_cast<std::size_t>(slices * out_slice_bytes_));
    const bool cropped = w.in_begin != w.out_begin || w.in_end != w.out_end;
    if (job_.op == VolumeStreamJob::Op::kGradient) {
      if (cropped) return absl::InternalError("gradient slabs need no halo");
      const std::int64_t plane = window.Pixels();
      float* base = reinterpret_cast<float*>(data->data());
      GradientOutputs g;
      int next = 0;
      g.gx = base + plane * next++;
      g.gy = base + plane * next++;
      if (job_.gradient.magnitude) g.magnitude = base + plane * next++;
      if (job_.gradient.angle) g.angle = base + plane * next++;
      CUIMG_RETURN_IF_ERROR(service_->backend().Gradient(in, job_.gradient, g, times, cancel_));
    } else if (!cropped) {
      const ImageView result{job_.type, window, 1, data->data()};
      CUIMG_RETURN_IF_ERROR(
          service_->backend().Morphology(in, result, job_.steps, nullptr, times, cancel_));
    } else {
      Image result(job_.type, window, 1);
      CUIMG_RETURN_IF_ERROR(
          service_->backend().Morphology(in, result.view(), job_.steps, nullptr, times, cancel_));
      std::memcpy(data->data(), result.bytes() + (w.out_begin - w.in_begin) * in_slice_bytes_,
                  data->size());
    }
    service_->metrics().AddPixels("ProcessVolumeStream", slices * job_.extent.SlicePixels());
    return absl::OkStatus();
  }

  // The next result slab of a whole-volume chain, as the message being written.
  const v1::VolumeStreamResponse* WholeSlab() {
    const std::int64_t slices = std::min(max_out_slices_, job_.extent.depth - next_write_);
    writing_message_ = whole_->Message(next_write_, slices, job_.resolved_elements);
    ++in_flight_;  // OnWriteDone's count, as for a slab's message
    writing_ = true;
    return writing_message_.get();
  }

  // The first error wins; later ones are consequences. The stream's other slabs stop at their
  // next check: their results would not be sent. OK passes.
  void Fail(const absl::Status& status) {
    if (status.ok()) return;
    if (status_.ok()) status_ = status;
    cancel_.Cancel();
  }

  // Moves the stream along after any event: dispatches the slabs the input allows, sends the next
  // result in z order, reads on while within the caps, and finishes once nothing is outstanding.
  // Called with the lock held; releases it. Finish comes last: OnDone may delete `this` after it.
  void Pump(std::unique_lock<std::mutex> lock) override {
    if (finished_) return;
    if (status_.ok() && header_seen_) {
      while (in_flight_ < kMaxSlabsInFlight) {
        const std::optional<SlabWindow> w =
            NextSlabWindow(job_.extent.depth, reach_, received_, next_dispatch_, max_out_slices_);
        if (!w.has_value()) break;
        if (const absl::Status s = Dispatch(*w); !s.ok()) {
          Fail(s);
          break;
        }
        next_dispatch_ = w->out_end;
      }
      // Slices below the next window's first input slice are no longer needed.
      const std::int64_t keep_from = std::max<std::int64_t>(0, next_dispatch_ - reach_);
      while (!chunks_.empty() && chunks_.front()->z_end <= keep_from) chunks_.pop_front();
      if (whole_ != nullptr && gathered_ == job_.extent.depth && !whole_started_) {
        if (const absl::Status s = DispatchWhole(); !s.ok()) Fail(s);
      }
    }
    if (status_.ok() && !writing_) {
      if (whole_ != nullptr) {
        if (whole_done_ && next_write_ < job_.extent.depth) StartWrite(WholeSlab());
      } else if (auto it = ready_.find(next_write_); it != ready_.end()) {
        writing_message_ = std::move(it->second);
        ready_.erase(it);
        writing_ = true;
        StartWrite(writing_message_.get());
      }
    }
    const std::int64_t ahead = received_ - next_dispatch_ - reach_;
    if (status_.ok() &&
        (!header_seen_ || received_ == job_.extent.depth ||
         (in_flight_ < kMaxSlabsInFlight && ahead * in_slice_bytes_ < kReadAheadBytes))) {
      ReadNextLocked();
    }
    const bool done =
        status_.ok() && input_done_ && header_seen_ && next_write_ == job_.extent.depth;
    if (running_ > 0 || writing_ || !(done || !status_.ok())) return;
    ready_.clear();
    chunks_.clear();
    whole_.reset();
    whole_held_.Release();
    FinishLocked(std::move(lock), status_);
  }

  WorkQueue* const queue_;
  // Everything below is guarded by mu_; cancel_ stops every slab's backend work.
  VolumeStreamJob job_;
  bool header_seen_ = false;
  int reach_ = 0;
  std::int64_t in_slice_bytes_ = 0;
  std::int64_t out_slice_bytes_ = 0;
  std::int64_t max_out_slices_ = 1;
  std::deque<std::shared_ptr<const Chunk>> chunks_;
  std::int64_t received_ = 0;       // slices received
  std::int64_t next_dispatch_ = 0;  // first output slice not yet given to a slab
  std::int64_t next_write_ = 0;     // first output slice not yet sent
  int running_ = 0;                 // slabs on the work queue
  int in_flight_ = 0;               // slabs dispatched and not yet sent
  std::map<std::int64_t, std::unique_ptr<v1::VolumeStreamResponse>> ready_;  // by z_begin
  // A chain with a global step: the steps run slab by slab (those before it), the whole-volume
  // stage with its budget share, the slices gathered into it, and its run's progress.
  std::vector<MorphologyStep> local_steps_;
  std::unique_ptr<WholeVolumeStage> whole_;
  InflightBudget::Reservation whole_held_;
  std::int64_t gathered_ = 0;
  bool whole_started_ = false;
  bool whole_done_ = false;
  std::unique_ptr<v1::VolumeStreamResponse> writing_message_;
  absl::Status status_;
};

}  // namespace

grpc::ServerBidiReactor<v1::VolumeStreamRequest, v1::VolumeStreamResponse>*
ImagingService::ProcessVolumeStream(grpc::CallbackServerContext* ctx) {
  return new VolumeStreamReactor(this, queue_, ctx);
}

}  // namespace cuimg
