// A batch's work once admitted (ImagingService::Serve, types.proto): every entry resolved, then
// run, entries of one 2D shape and type as the slices of one volume where the operation works
// slice by slice (Morphology with 2D elements, Gradient): one backend call, and on the CUDA
// backend one copy each way and one launch per pass, instead of one of each per image. Others
// run one by one through the unary call's own steps. Each entry's outcome goes to its result.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/morphology_types.h"
#include "server/rpc/image_input.h"
#include "server/rpc/imaging_service.h"
#include "server/rpc/result_slot.h"
#include "server/rpc/status_conversion.h"
#include "server/rpc/wire_pixels.h"

namespace cuimg {
namespace {

// The call's stage times summed over a batch's pieces of work: each backend call and decode
// sets the stages it ran (h2d, kernel, ...), so they are collected after each and cleared.
class BatchTimes {
 public:
  BatchTimes(StageTimes* times, ServerMetrics* metrics)
      : times_(times), metrics_(metrics), sum_(*times) {}
  ~BatchTimes() {
    Collect();
    *times_ = sum_;
  }
  BatchTimes(const BatchTimes&) = delete;
  BatchTimes& operator=(const BatchTimes&) = delete;

  // A decode's times, run apart from the call's (DecodeInput on another thread).
  void AddDecode(const StageTimes& t) {
    times_->decode_us += t.decode_us;
    if (t.decode_device >= 0) times_->decode_device = t.decode_device;
    if (t.decode_fallback != nullptr) times_->decode_fallback = t.decode_fallback;
    if (t.decode_batch > 0) {
      times_->decode_batch = t.decode_batch;
      times_->decode_batch_first = t.decode_batch_first;
      times_->decode_batch_wait_us = t.decode_batch_wait_us;
    }
    Collect();
  }

  void Collect() {
    sum_.decode_us += times_->decode_us;
    sum_.h2d_us += times_->h2d_us;
    sum_.kernel_us += times_->kernel_us;
    sum_.d2h_us += times_->d2h_us;
    if (times_->device >= 0) sum_.device = times_->device;
    if (times_->decode_device >= 0) sum_.decode_device = times_->decode_device;
    if (times_->decode_fallback != nullptr) sum_.decode_fallback = times_->decode_fallback;
    // Each decode batch is recorded here: the call's own record holds one at most.
    if (times_->decode_batch > 0) sum_.decode_batch = times_->decode_batch;
    if (times_->decode_batch_first) {
      metrics_->RecordDecodeBatch(times_->decode_batch, times_->decode_batch_wait_us);
    }
    if (times_->detect_batch > 0) sum_.detect_batch = times_->detect_batch;
    if (times_->detect_batch_first) {
      metrics_->RecordDetectBatch(times_->detect_batch, times_->detect_batch_wait_us);
    }
    times_->detect_batch = 0;
    times_->detect_batch_first = false;
    times_->detect_batch_wait_us = 0;
    times_->decode_us = times_->h2d_us = times_->kernel_us = times_->d2h_us = 0;
    times_->decode_batch = 0;
    times_->decode_batch_first = false;
    times_->decode_batch_wait_us = 0;
  }

 private:
  StageTimes* times_;
  ServerMetrics* metrics_;
  StageTimes sum_;
};

// Entries that may run as the slices of one volume: host pixels of one channel, 2D.
bool Sliceable(const ResolvedImage& in) {
  return in.on_device == nullptr && in.view.data != nullptr && in.view.extent.depth == 1 &&
         in.view.channels == 1;
}

// Groups of at least two entries (indices, in order) of one type and 2D shape among those
// `sliceable` allows, each group at most `max_pixels` pixels and `max_side` slices.
template <typename Sliceable>
std::vector<std::vector<int>> SliceGroups(const std::vector<ResolvedImage>& inputs,
                                          const Sliceable& sliceable, std::int64_t max_pixels,
                                          int max_side) {
  std::map<std::tuple<PixelType, std::int64_t, std::int64_t>, std::vector<int>> by_shape;
  for (int i = 0; i < static_cast<int>(inputs.size()); ++i) {
    if (!sliceable(i)) continue;
    const ImageView& v = inputs[static_cast<std::size_t>(i)].view;
    by_shape[{v.type, v.extent.width, v.extent.height}].push_back(i);
  }
  std::vector<std::vector<int>> groups;
  for (auto& [shape, members] : by_shape) {
    const std::int64_t slice = std::get<1>(shape) * std::get<2>(shape);
    const auto per_group = static_cast<std::size_t>(
        std::max<std::int64_t>(1, std::min<std::int64_t>(max_pixels / slice, max_side)));
    for (std::size_t at = 0; at < members.size(); at += per_group) {
      const std::size_t end = std::min(members.size(), at + per_group);
      if (end - at >= 2) groups.emplace_back(members.begin() + at, members.begin() + end);
    }
  }
  return groups;
}

// The members' pixels as one volume: where they already lie one after another (inline entries
// detached together, consecutive tiles of a shared-memory region), else gathered into `gathered`.
const void* VolumeOf(const std::vector<int>& members, const std::vector<ResolvedImage>& inputs,
                     Backend& backend, std::unique_ptr<HostBuffer>* gathered) {
  const ImageView& first = inputs[static_cast<std::size_t>(members[0])].view;
  const std::size_t slice = first.Bytes();
  const auto* base = static_cast<const std::uint8_t*>(first.data);
  bool consecutive = true;
  for (std::size_t k = 0; k < members.size() && consecutive; ++k) {
    consecutive = inputs[static_cast<std::size_t>(members[k])].view.data == base + k * slice;
  }
  if (consecutive) return base;
  *gathered = backend.AllocateHostBuffer(members.size() * slice);
  auto* out = static_cast<std::uint8_t*>((*gathered)->data());
  for (std::size_t k = 0; k < members.size(); ++k) {
    std::memcpy(out + k * slice, inputs[static_cast<std::size_t>(members[k])].view.data, slice);
  }
  return out;
}

// Each entry's status into its result; a failed entry's response cleared, with what it had
// attached beside the response.
template <typename Response>
void FinishEntries(const std::vector<absl::Status>& outcome, CallScope& call, Response* response) {
  for (std::size_t i = 0; i < outcome.size(); ++i) {
    auto* result = response->mutable_results(static_cast<int>(i));
    ToEntryStatus(outcome[i], result->mutable_status());
    if (outcome[i].ok()) continue;
    // Null where nothing goes beside the response (DetectStream's frames).
    if (DetachedResults* detached = call.detached_results()) detached->Discard(result->response());
    result->clear_response();
  }
}

// Runs `batch`'s entries: `resolve` each admitted one (an error is its outcome), `groups` of
// them as one (`slices`; a group that fails runs again one by one, so that each entry gets its
// own outcome), the rest one by one (`single`). The call fails only when it is no longer alive.
template <typename Job, typename Response, typename Resolve, typename Group, typename Slices,
          typename Single>
absl::Status RunEntries(const BatchJob<Job>& batch, CallScope& call, ServerMetrics& metrics,
                        Response* response, const Resolve& resolve, const Group& group,
                        const Slices& slices, const Single& single) {
  const std::size_t n = batch.entries.size();
  for (std::size_t i = 0; i < n; ++i) response->add_results();
  std::vector<absl::Status> outcome(n);
  std::vector<ResolvedImage> inputs(n);
  std::vector<bool> done(n, false);
  {
    BatchTimes times(&call.times(), &metrics);
    for (std::size_t i = 0; i < n; ++i) {
      if (!batch.entries[i].ok()) {
        outcome[i] = batch.entries[i].status();
        done[i] = true;
        continue;
      }
      absl::StatusOr<ResolvedImage> in = resolve(*batch.entries[i]);
      times.Collect();
      CUIMG_RETURN_IF_ERROR(call.CheckAlive());
      if (!in.ok()) {
        outcome[i] = in.status();
        done[i] = true;
        continue;
      }
      inputs[i] = *std::move(in);
    }
    for (const std::vector<int>& members : group(inputs, done)) {
      const absl::Status status = slices(members, inputs);
      times.Collect();
      CUIMG_RETURN_IF_ERROR(call.CheckAlive());
      if (!status.ok()) continue;  // the members run one by one below
      for (int m : members) done[static_cast<std::size_t>(m)] = true;
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (done[i]) continue;
      outcome[i] = single(*batch.entries[i], inputs[i],
                          response->mutable_results(static_cast<int>(i))->mutable_response());
      times.Collect();
      CUIMG_RETURN_IF_ERROR(call.CheckAlive());
    }
  }
  FinishEntries(outcome, call, response);
  return absl::OkStatus();
}

}  // namespace

absl::Status ImagingService::RunBatch(const BatchJob<MorphologyJob>& batch, CallScope& call,
                                      v1::MorphologyResponse* response) {
  auto resolve = [&](const MorphologyJob& job) -> absl::StatusOr<ResolvedImage> {
    CUIMG_ASSIGN_OR_RETURN(
        ResolvedImage in,
        ResolveImage(job.input, call, *store_, shared_memory_.get(), options_.limits, decoders_));
    CUIMG_RETURN_IF_ERROR(CheckMorphologyInput(in.view, job));
    return in;
  };
  auto group = [&](const std::vector<ResolvedImage>& inputs, const std::vector<bool>& done) {
    return SliceGroups(
        inputs,
        [&](int i) {
          const auto k = static_cast<std::size_t>(i);
          if (done[k] || !batch.same_parameters || !Sliceable(inputs[k])) return false;
          const MorphologyJob& job = *batch.entries[k];
          // A 2D element (depth 1) works on each slice alone, a global step (hole filling,
          // components, reconstruction) on the whole volume; results kept resident are stored
          // image by image.
          return !job.output.keep_resident &&
                 std::all_of(job.steps.begin(), job.steps.end(), [](const MorphologyStep& s) {
                   return s.element.depth() == 1 && !IsGlobalStep(s);
                 });
        },
        options_.limits.max_pixels, options_.limits.max_side);
  };
  auto slices = [&](const std::vector<int>& members, const std::vector<ResolvedImage>& inputs) {
    return MorphologySlices(batch, members, inputs, call, response);
  };
  auto single = [&](const MorphologyJob& job, const ResolvedImage& in,
                    v1::MorphologyResponse* out) { return MorphologyOf(job, in, call, out); };
  return RunEntries(batch, call, *metrics_, response, resolve, group, slices, single);
}

absl::Status ImagingService::MorphologySlices(const BatchJob<MorphologyJob>& batch,
                                              const std::vector<int>& members,
                                              const std::vector<ResolvedImage>& inputs,
                                              CallScope& call, v1::MorphologyResponse* response) {
  const MorphologyJob& job = *batch.entries[static_cast<std::size_t>(members[0])];
  const ImageView& first = inputs[static_cast<std::size_t>(members[0])].view;
  const std::size_t slice = first.Bytes();
  const int n = static_cast<int>(members.size());
  std::unique_ptr<HostBuffer> gathered;
  const void* volume = VolumeOf(members, inputs, *backend_, &gathered);
  // Results in a buffer of their own, not over the inputs: a group that fails runs again image
  // by image from the same inputs.
  DetachedResults& detached = *call.detached_results();
  std::shared_ptr<HostBuffer> out = detached.Allocate(slice * members.size());
  const Extent extent{first.extent.width, first.extent.height, n};
  CUIMG_RETURN_IF_ERROR(
      backend_->Morphology(InputImage(ImageView{first.type, extent, 1, const_cast<void*>(volume)}),
                           ImageView{first.type, extent, 1, out->data()}, job.steps, nullptr,
                           &call.times(), call.cancel()));
  for (int k = 0; k < n; ++k) {
    const std::size_t m = static_cast<std::size_t>(members[static_cast<std::size_t>(k)]);
    v1::ImageResult* result =
        response->mutable_results(static_cast<int>(m))->mutable_response()->mutable_result();
    DescribeResult(first.type, first.extent, inputs[m].spacing, result);
    detached.Attach(result, out, static_cast<std::size_t>(k) * slice, slice);
  }
  metrics_->AddPixels("Morphology", extent.Pixels());
  return absl::OkStatus();
}

absl::Status ImagingService::RunBatch(const BatchJob<GradientJob>& batch, CallScope& call,
                                      v1::GradientResponse* response) {
  auto resolve = [&](const GradientJob& job) -> absl::StatusOr<ResolvedImage> {
    CUIMG_ASSIGN_OR_RETURN(
        ResolvedImage in,
        ResolveImage(job.input, call, *store_, shared_memory_.get(), options_.limits, decoders_));
    CUIMG_RETURN_IF_ERROR(CheckGradientInput(in.view, job));
    return in;
  };
  auto group = [&](const std::vector<ResolvedImage>& inputs, const std::vector<bool>& done) {
    return SliceGroups(
        inputs,
        [&](int i) {
          const auto k = static_cast<std::size_t>(i);
          // Gradient works slice by slice on a volume.
          return !done[k] && Sliceable(inputs[k]) && !batch.entries[k]->output.keep_resident;
        },
        options_.limits.max_pixels, options_.limits.max_side);
  };
  auto slices = [&](const std::vector<int>& members, const std::vector<ResolvedImage>& inputs) {
    return GradientSlices(batch, members, inputs, call, response);
  };
  auto single = [&](const GradientJob& job, const ResolvedImage& in, v1::GradientResponse* out) {
    return GradientOf(job, in, call, out);
  };
  return RunEntries(batch, call, *metrics_, response, resolve, group, slices, single);
}

absl::Status ImagingService::GradientSlices(const BatchJob<GradientJob>& batch,
                                            const std::vector<int>& members,
                                            const std::vector<ResolvedImage>& inputs,
                                            CallScope& call, v1::GradientResponse* response) {
  const GradientJob& job = *batch.entries[static_cast<std::size_t>(members[0])];
  const ImageView& first = inputs[static_cast<std::size_t>(members[0])].view;
  const int n = static_cast<int>(members.size());
  std::unique_ptr<HostBuffer> gathered;
  const void* volume = VolumeOf(members, inputs, *backend_, &gathered);
  const std::size_t plane = static_cast<std::size_t>(first.extent.Pixels()) * sizeof(float);
  DetachedResults& detached = *call.detached_results();
  std::shared_ptr<HostBuffer> planes[4];  // gx, gy, magnitude, angle
  const bool wanted[4] = {true, true, job.spec.magnitude, job.spec.angle};
  float* data[4] = {};
  for (int p = 0; p < 4; ++p) {
    if (!wanted[p]) continue;
    planes[p] = detached.Allocate(plane * members.size());
    data[p] = static_cast<float*>(planes[p]->data());
  }
  const Extent extent{first.extent.width, first.extent.height, n};
  CUIMG_RETURN_IF_ERROR(backend_->Gradient(
      InputImage(ImageView{first.type, extent, 1, const_cast<void*>(volume)}), job.spec,
      GradientOutputs{data[0], data[1], data[2], data[3]}, &call.times(), call.cancel()));
  CUIMG_ASSIGN_OR_RETURN(GradientTaps taps, ComputeGradientTaps(job.spec));
  for (int k = 0; k < n; ++k) {
    const std::size_t m = static_cast<std::size_t>(members[static_cast<std::size_t>(k)]);
    v1::GradientResponse* entry =
        response->mutable_results(static_cast<int>(m))->mutable_response();
    v1::ImageResult* results[4] = {entry->mutable_gx(), entry->mutable_gy(),
                                   wanted[2] ? entry->mutable_magnitude() : nullptr,
                                   wanted[3] ? entry->mutable_angle() : nullptr};
    for (int p = 0; p < 4; ++p) {
      if (!wanted[p]) continue;
      DescribeResult(PixelType::kF32, first.extent, inputs[m].spacing, results[p]);
      detached.Attach(results[p], planes[p], static_cast<std::size_t>(k) * plane, plane);
    }
    for (double t : taps.smoothing) entry->add_smoothing_taps(static_cast<float>(t));
    for (double t : taps.derivative) entry->add_derivative_taps(static_cast<float>(t));
  }
  metrics_->AddPixels("Gradient", extent.Pixels());
  return absl::OkStatus();
}

absl::Status ImagingService::RunBatch(const BatchJob<PyramidJob>& batch, CallScope& call,
                                      v1::PyramidResponse* response) {
  // Levels differ per image: one by one, each resolved by the unary run itself (so that one
  // decoded input is held at a time).
  auto resolve = [](const PyramidJob&) -> absl::StatusOr<ResolvedImage> { return ResolvedImage(); };
  auto no_groups = [](const std::vector<ResolvedImage>&, const std::vector<bool>&) {
    return std::vector<std::vector<int>>();
  };
  auto no_slices = [](const std::vector<int>&, const std::vector<ResolvedImage>&) {
    return absl::OkStatus();
  };
  auto single = [&](const PyramidJob& job, const ResolvedImage&, v1::PyramidResponse* out) {
    return RunPyramid(job, call, out);
  };
  return RunEntries(batch, call, *metrics_, response, resolve, no_groups, no_slices, single);
}

absl::Status ImagingService::RunBatch(const BatchJob<DetectJob>& batch, CallScope& call,
                                      v1::DetectPedestriansResponse* response) {
  // In waves of --batch_max_size entries: a wave's PNG/JPEG files decode at once, each on its own
  // thread, so that their GPU decodes share the hardware's batches (one at a time, each would
  // run alone); then its entries detect one by one. A wave's decoded images are held until it
  // has run, so that at most a wave's are held at once.
  const std::size_t n = batch.entries.size();
  const std::size_t wave = static_cast<std::size_t>(std::max(1, options_.batch_max_size));
  for (std::size_t i = 0; i < n; ++i) response->add_results();
  std::vector<absl::Status> outcome(n);
  {
    BatchTimes times(&call.times(), metrics_);
    for (std::size_t begin = 0; begin < n; begin += wave) {
      const std::size_t end = std::min(n, begin + wave);
      std::vector<absl::StatusOr<ResolvedImage>> inputs(end - begin);
      std::vector<StageTimes> decode_times(end - begin);
      auto encoded = [&](std::size_t i) {
        return batch.entries[i].ok() && batch.entries[i]->input.kind == ImageInput::Kind::kEncoded;
      };
      std::vector<std::thread> decoding;
      std::size_t last = end;  // the wave's last file decodes on this thread
      for (std::size_t i = begin; i < end; ++i) {
        if (encoded(i)) last = i;
      }
      for (std::size_t i = begin; i < end; ++i) {
        if (!encoded(i)) continue;
        auto decode = [&, i] {
          inputs[i - begin] = DecodeInput(batch.entries[i]->input, options_.limits, decoders_,
                                          &decode_times[i - begin]);
        };
        if (i == last) {
          decode();
        } else {
          decoding.emplace_back(decode);
        }
      }
      for (std::thread& t : decoding) t.join();
      for (std::size_t i = begin; i < end; ++i) {
        if (!batch.entries[i].ok()) {
          outcome[i] = batch.entries[i].status();
          continue;
        }
        const DetectJob& job = *batch.entries[i];
        absl::StatusOr<ResolvedImage>& in = inputs[i - begin];
        if (encoded(i)) {
          times.AddDecode(decode_times[i - begin]);
        } else {
          in = ResolveImage(job.input, call, *store_, shared_memory_.get(), options_.limits,
                            decoders_);
        }
        outcome[i] =
            in.ok() ? DetectOf(job, *in, call,
                               response->mutable_results(static_cast<int>(i))->mutable_response())
                    : in.status();
        times.Collect();
        CUIMG_RETURN_IF_ERROR(call.CheckAlive());
      }
    }
  }
  FinishEntries(outcome, call, response);
  return absl::OkStatus();
}

}  // namespace cuimg
