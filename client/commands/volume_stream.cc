#include "client/commands/volume_stream.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/morphology_spec.h"
#include "client/request_building.h"
#include "proto/wire_contract.h"

namespace cuimg {
namespace {

// One stream's share of the volume: output slices [keep_begin, keep_end), computed from input
// slices [in_begin, in_end).
struct Part {
  std::int64_t in_begin = 0;
  std::int64_t in_end = 0;
  std::int64_t keep_begin = 0;
  std::int64_t keep_end = 0;
};

// The output's z range split evenly into `streams` parts (each at least 2 slices, so that no part
// is sent as a 2D image), each widened by `reach` either side within the volume.
std::vector<Part> SplitDepth(std::int64_t depth, int streams, int reach) {
  const std::int64_t count = std::max<std::int64_t>(1, std::min<std::int64_t>(streams, depth / 2));
  std::vector<Part> parts;
  for (std::int64_t k = 0; k < count; ++k) {
    Part p;
    p.keep_begin = depth * k / count;
    p.keep_end = depth * (k + 1) / count;
    p.in_begin = std::max<std::int64_t>(0, p.keep_begin - reach);
    p.in_end = std::min(depth, p.keep_end + reach);
    parts.push_back(p);
  }
  return parts;
}

// The streams of one volume: once one fails, the others are cancelled, so the caller has the
// first failure without waiting for the rest of the volume.
class StreamGroup {
 public:
  // Registers a stream's context; false when a stream has already failed (do not start).
  bool Join(grpc::ClientContext* context) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!first_failure_.ok()) return false;
    contexts_.push_back(context);
    return true;
  }
  void Leave(grpc::ClientContext* context) {
    std::lock_guard<std::mutex> lock(mu_);
    contexts_.erase(std::remove(contexts_.begin(), contexts_.end(), context), contexts_.end());
  }
  // Records `status` if it is the first failure, and cancels the streams still running.
  void Fail(const absl::Status& status) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!first_failure_.ok()) return;
    first_failure_ = status;
    for (grpc::ClientContext* c : contexts_) c->TryCancel();
  }
  absl::Status first_failure() {
    std::lock_guard<std::mutex> lock(mu_);
    return first_failure_;
  }

 private:
  std::mutex mu_;
  absl::Status first_failure_;
  std::vector<grpc::ClientContext*> contexts_;
};

// Streams input slices [part.in_begin, part.in_end) of `volume` as a volume of their own on
// `context` and copies the results of slices [part.keep_begin, part.keep_end) into `planes` (each
// `out_slice` bytes per slice, `plane_count` of them). `header`'s volume shape is the part's.
absl::Status StreamPart(v1::Imaging::Stub& stub, grpc::ClientContext& context,
                        const v1::VolumeStreamHeader& header, const Image& volume, int slab_slices,
                        const Part& part, int plane_count, std::size_t out_slice,
                        std::vector<Image>& planes, std::string* timing, int* result_slabs,
                        std::vector<v1::StructuringElement>* resolved) {
  const Extent& e = volume.extent();
  const std::size_t in_slice = static_cast<std::size_t>(e.SlicePixels()) * PixelSize(volume.type());
  const std::int64_t depth = part.in_end - part.in_begin;
  auto stream = stub.ProcessVolumeStream(&context);
  std::thread writer([&] {
    v1::VolumeStreamRequest message;
    *message.mutable_header() = header;
    bool ok = stream->Write(message);
    const char* first = reinterpret_cast<const char*>(volume.bytes()) + part.in_begin * in_slice;
    for (std::int64_t z = 0; ok && z < depth; z += slab_slices) {
      const std::int64_t n = std::min<std::int64_t>(slab_slices, depth - z);
      message.set_slab(first + z * in_slice, n * in_slice);
      ok = stream->Write(message);
    }
    stream->WritesDone();
  });
  v1::VolumeStreamResponse response;
  std::int64_t next_z = 0;  // within the part
  std::string problem;
  *result_slabs = 0;
  while (stream->Read(&response)) {
    const std::int64_t n = response.slices();
    if (response.z_begin() != next_z || n < 1 || next_z + n > depth ||
        response.data().size() != static_cast<std::size_t>(plane_count * n) * out_slice) {
      if (problem.empty()) {
        problem = absl::StrCat("the server sent slab z=", part.in_begin + response.z_begin(), " (",
                               n, " slices, ", response.data().size(), " bytes) where slice ",
                               part.in_begin + next_z, " was expected");
      }
      continue;
    }
    // The slab's slices that are this part's to keep (the others are halo).
    const std::int64_t from = std::max(next_z, part.keep_begin - part.in_begin);
    const std::int64_t to = std::min(next_z + n, part.keep_end - part.in_begin);
    for (int p = 0; p < plane_count && from < to; ++p) {
      std::memcpy(planes[p].bytes() + (part.in_begin + from) * out_slice,
                  response.data().data() + (p * n + from - next_z) * out_slice,
                  (to - from) * out_slice);
    }
    if (resolved != nullptr && response.resolved_elements_size() > 0) {
      resolved->assign(response.resolved_elements().begin(), response.resolved_elements().end());
    }
    next_z += n;
    ++*result_slabs;
  }
  writer.join();
  const grpc::Status finished = stream->Finish();
  *timing = TimingTrailerText(context);
  if (!finished.ok()) return FromGrpcStatus(finished);
  if (!problem.empty()) return absl::InternalError(problem);
  if (next_z != depth) {
    return absl::InternalError(absl::StrCat("the server returned ", next_z, " of ", depth,
                                            " slices from slice ", part.in_begin));
  }
  return absl::OkStatus();
}

// How long a stream that failed UNAVAILABLE waits for its connection before it is sent again.
// Debian's gRPC 1.51 now and then reports a local connect() still in progress as failed (a stale
// errno, fixed upstream in grpc/grpc#35064); one of several connections then backs off for a
// second, longer than the retry policy's attempts span, and would fail the whole volume.
constexpr auto kReconnectWait = std::chrono::seconds(3);

}  // namespace

std::vector<std::shared_ptr<grpc::Channel>> ConnectStreams(const ConnectionOptions& connection,
                                                           int count) {
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (int k = 0; k < std::max(1, count); ++k) channels.push_back(MakeChannel(connection, k));
  return channels;
}

bool HeaderHasGlobalStep(const v1::VolumeStreamHeader& header) {
  if (!header.has_morphology()) return false;
  for (const v1::MorphologyStep& step : header.morphology().steps()) {
    if (IsGlobalOp(step.op())) return true;
  }
  return false;
}

bool HeaderHasRadius(const v1::VolumeStreamHeader& header) {
  if (!header.has_morphology()) return false;
  for (const v1::MorphologyStep& step : header.morphology().steps()) {
    if (step.element().has_radius()) return true;
  }
  return false;
}

int HeaderZReach(const v1::VolumeStreamHeader& header) {
  if (!header.has_morphology()) return 0;
  int reach = 0;
  for (const v1::MorphologyStep& step : header.morphology().steps()) {
    if (IsGlobalOp(step.op())) break;  // the server gathers the whole volume from here
    const v1::StructuringElement& e = step.element();
    const int depth = std::max<int>(1, static_cast<int>(e.depth()));
    const int anchor = e.has_anchor_z() ? static_cast<int>(e.anchor_z()) : depth / 2;
    const int iterations = std::max<int>(1, static_cast<int>(step.iterations()));
    const bool single =
        step.op() == v1::MORPHOLOGY_OP_ERODE || step.op() == v1::MORPHOLOGY_OP_DILATE;
    reach += std::max(anchor, depth - 1 - anchor) * (single ? 1 : 2) * iterations;
  }
  return reach;
}

absl::StatusOr<StreamedVolume> StreamVolume(
    const std::vector<std::shared_ptr<grpc::Channel>>& channels,
    const ConnectionOptions& connection, v1::VolumeStreamHeader header, const Image& volume,
    int slab_slices) {
  if (slab_slices < 1) return absl::InvalidArgumentError("--slab_slices: must be >= 1");
  if (channels.empty()) return absl::InvalidArgumentError("--volume_streams: must be >= 1");
  if (volume.channels() != 1) {
    return absl::InvalidArgumentError("streamed volumes need one channel");
  }
  const Extent& e = volume.extent();
  v1::Image* shape = header.mutable_volume();
  shape->set_pixel_type(PixelTypeToProto(volume.type()));
  shape->set_width(static_cast<std::uint32_t>(e.width));
  shape->set_height(static_cast<std::uint32_t>(e.height));
  StreamedVolume out;
  PixelType out_type = volume.type();
  int planes = 1;
  if (header.has_gradient()) {
    out_type = PixelType::kF32;
    planes = 2 + header.gradient().magnitude() + header.gradient().angle();
  }
  // Every byte is written by the streams' readers (or the call fails), so the planes are not
  // zero-filled first: that alone took about as long as the server's whole work on a 157 MB
  // volume, on one thread, where the readers now take the page faults in parallel.
  for (int p = 0; p < planes; ++p) out.planes.emplace_back(out_type, e, 1, Image::kUninitialized);
  const std::size_t out_slice = static_cast<std::size_t>(e.SlicePixels()) * PixelSize(out_type);

  const int streams = HeaderHasRadius(header) || HeaderHasGlobalStep(header)
                          ? 1
                          : static_cast<int>(channels.size());
  const std::vector<Part> parts = e.depth > 1 ? SplitDepth(e.depth, streams, HeaderZReach(header))
                                              : std::vector<Part>{Part{0, 1, 0, 1}};
  StreamGroup group;
  out.stream_timings.resize(parts.size());
  out.stream_attempts.assign(parts.size(), 0);
  out.stream_slabs.assign(parts.size(), 0);
  auto run = [&](std::size_t k) {
    v1::VolumeStreamHeader part_header = header;
    const std::int64_t depth = parts[k].in_end - parts[k].in_begin;
    part_header.mutable_volume()->set_depth(depth > 1 ? static_cast<std::uint32_t>(depth) : 0);
    const std::unique_ptr<v1::Imaging::Stub> stub = v1::Imaging::NewStub(channels[k]);
    auto deadline = std::chrono::system_clock::time_point::max();
    absl::Status status;
    for (int attempt = 1;; ++attempt) {
      grpc::ClientContext context;
      PrepareContext(connection, &context);
      if (attempt == 1) deadline = context.deadline();  // the retry keeps the call's deadline
      context.set_deadline(deadline);
      if (!group.Join(&context)) return;  // another stream failed: nothing to add
      out.stream_attempts[k] = attempt;
      status = StreamPart(*stub, context, part_header, volume, slab_slices, parts[k], planes,
                          out_slice, out.planes, &out.stream_timings[k], &out.stream_slabs[k],
                          k == 0 ? &out.resolved_elements : nullptr);
      group.Leave(&context);
      if (attempt == 2 || status.code() != absl::StatusCode::kUnavailable ||
          !channels[k]->WaitForConnected(
              std::min(deadline, std::chrono::system_clock::now() + kReconnectWait))) {
        break;
      }
    }
    if (!status.ok()) group.Fail(status);
  };
  std::vector<std::thread> others;
  for (std::size_t k = 1; k < parts.size(); ++k) others.emplace_back(run, k);
  run(0);
  for (std::thread& t : others) t.join();
  if (absl::Status failure = group.first_failure(); !failure.ok()) return failure;
  return out;
}

std::string StreamedVolume::summary(double wall_ms, std::size_t volume_bytes) const {
  double longest_us = 0, kernel_us = 0, copies_us = 0;
  for (const std::string& trailer : stream_timings) {
    // Absent fields (-1) count as 0.
    const TimingTrailer t = ParseTimingTrailer(trailer);
    longest_us = std::max(longest_us, t.total_us);
    kernel_us += std::max(0.0, t.kernel_us);
    copies_us += std::max(0.0, t.h2d_us) + std::max(0.0, t.d2h_us);
  }
  int slabs = 0;
  for (int s : stream_slabs) slabs += s;
  std::vector<std::string> twice;
  for (std::size_t k = 0; k < stream_attempts.size(); ++k) {
    if (stream_attempts[k] > 1) twice.push_back(absl::StrCat(k + 1));
  }
  const double mb = static_cast<double>(volume_bytes) / 1e6;
  const std::size_t streams = stream_timings.size();
  std::string line = absl::StrFormat("%.1f MB at %.1f MB/s over %d stream%s, %d slab%s", mb,
                                     wall_ms > 0 ? mb / (wall_ms / 1e3) : 0.0, streams,
                                     streams == 1 ? "" : "s", slabs, slabs == 1 ? "" : "s");
  if (!twice.empty()) {
    absl::StrAppend(&line, " (stream", twice.size() == 1 ? " " : "s ", absl::StrJoin(twice, ", "),
                    " sent twice)");
  }
  absl::StrAppendFormat(&line,
                        "; server: longest stream %.1f ms, slab stages summed %.1f ms kernel + "
                        "%.1f ms copies",
                        longest_us / 1e3, kernel_us / 1e3, copies_us / 1e3);
  // How many slabs' stages ran at once on average: the sums over the longest stream's time.
  if (longest_us > 0) {
    absl::StrAppendFormat(&line, " (%.1f slabs at once)", (kernel_us + copies_us) / longest_us);
  }
  return line;
}

std::string StreamedVolume::server_timing() const {
  std::vector<std::string> labelled;
  for (std::size_t k = 0; k < stream_timings.size(); ++k) {
    const bool twice = k < stream_attempts.size() && stream_attempts[k] > 1;
    const std::string label = stream_timings.size() == 1
                                  ? std::string(twice ? "(sent twice) " : "")
                                  : absl::StrCat("stream ", k + 1, "/", stream_timings.size(),
                                                 twice ? " (sent twice)" : "", ": ");
    labelled.push_back(label + stream_timings[k]);
  }
  return absl::StrJoin(labelled, " | ");
}

}  // namespace cuimg
