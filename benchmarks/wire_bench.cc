// Host time of a batch call's wire work on the server (wire_pixels.h), no GPU needed: a
// MorphologyRequest of N inline tiles parsed with their pixels detached (ParseWithDetachedInputs,
// into buffers reused as the server's pinned pool reuses them), and the MorphologyResponse of N
// batch entries, each with its tile's result attached to one buffer as a batch's stacked results
// are, serialized to a grpc::ByteBuffer (DetachedResults::Serialize) and freed. Prints one JSON
// line per workload: the median and best of the runs, in microseconds, and per entry.
// Usage: wire_bench [--quick]
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cuimg/v1/morphology.pb.h"
#include "server/rpc/wire_pixels.h"

namespace cuimg {
namespace {

struct Times {
  double median_us;
  double best_us;
};

template <typename Run>
Times Time(int runs, const Run& run) {
  std::vector<double> us;
  for (int i = 0; i < runs; ++i) us.push_back(run());
  std::sort(us.begin(), us.end());
  return Times{us[us.size() / 2], us.front()};
}

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// One buffer of each size, handed out again once freed: the server's pools (pinned messages,
// staging) hit after warm-up, so page faults of fresh allocations are not the server's cost.
HostBufferAllocator Reusing() {
  auto spare = std::make_shared<std::vector<std::shared_ptr<HostBuffer>>>();
  return [spare](std::size_t bytes) -> std::unique_ptr<HostBuffer> {
    std::shared_ptr<HostBuffer> hit;
    for (const std::shared_ptr<HostBuffer>& b : *spare) {
      if (b->size() == bytes && b.use_count() == 1) hit = b;
    }
    if (hit == nullptr) {
      hit = HeapHostBuffer(bytes);
      spare->push_back(hit);
    }
    // A view of the kept buffer: the server's pools hand theirs back the same way.
    class View : public HostBuffer {
     public:
      explicit View(std::shared_ptr<HostBuffer> b) : b_(std::move(b)) {}
      void* data() const override { return b_->data(); }
      std::size_t size() const override { return b_->size(); }

     private:
      std::shared_ptr<HostBuffer> b_;
    };
    return std::make_unique<View>(std::move(hit));
  };
}

void Workload(int entries, int side, int runs) {
  const std::size_t tile = static_cast<std::size_t>(side) * side;
  v1::MorphologyRequest request;
  const std::string pixels(tile, '\x07');
  for (int i = 0; i < entries; ++i) {
    v1::Image* image = request.add_inputs()->mutable_image();
    image->set_width(static_cast<std::uint32_t>(side));
    image->set_height(static_cast<std::uint32_t>(side));
    image->set_pixel_type(v1::PIXEL_TYPE_U8);
    image->set_data(pixels);
  }
  const std::string bytes = request.SerializeAsString();
  const HostBufferAllocator allocate = Reusing();
  const Times parse = Time(runs, [&] {
    grpc::Slice slice(bytes);
    grpc::ByteBuffer wire(&slice, 1);
    v1::MorphologyRequest got;
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<DetachedInputs> in = ParseWithDetachedInputs(&wire, allocate, &got);
    const double us = Since(t0);
    if (!in.ok() || in->inputs.size() != static_cast<std::size_t>(entries)) std::abort();
    return us;
  });
  const Times serialize = Time(runs, [&] {
    DetachedResults results(allocate);
    std::shared_ptr<HostBuffer> stacked = allocate(entries * tile);
    v1::MorphologyResponse response;
    for (int i = 0; i < entries; ++i) {
      v1::MorphologyBatchResult* entry = response.add_results();
      entry->mutable_status();
      v1::Image* image = entry->mutable_response()->mutable_result()->mutable_image();
      image->set_width(static_cast<std::uint32_t>(side));
      image->set_height(static_cast<std::uint32_t>(side));
      image->set_pixel_type(v1::PIXEL_TYPE_U8);
      results.Attach(&entry->response().result(), stacked, i * tile, tile);
    }
    const auto t0 = std::chrono::steady_clock::now();
    {
      grpc::ByteBuffer wire;
      if (!results.Serialize(response, &wire).ok() || wire.Length() < entries * tile) std::abort();
    }
    return Since(t0);
  });
  std::printf(
      "{\"workload\": \"batch_%dx%dx%d_u8\", \"runs\": %d, \"parse_median_us\": %.1f, "
      "\"parse_best_us\": %.1f, \"serialize_median_us\": %.1f, \"serialize_best_us\": %.1f, "
      "\"parse_per_entry_us\": %.2f, \"serialize_per_entry_us\": %.2f}\n",
      side, side, entries, runs, parse.median_us, parse.best_us, serialize.median_us,
      serialize.best_us, parse.median_us / entries, serialize.median_us / entries);
}

}  // namespace
}  // namespace cuimg

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  if (argc > 2 || (argc == 2 && !quick)) {
    std::fprintf(stderr, "usage: wire_bench [--quick]\n");
    return 2;
  }
  const int runs = quick ? 51 : 401;
  cuimg::Workload(256, 64, runs);
  cuimg::Workload(64, 256, runs);
  return 0;
}
