// The service against its transport floor, in one run: an echo server (echo_server.cc, the same
// gRPC and transport settings as cuimg-server) and a cuimg-server, both already listening; this
// client (C++) measures
//   - one call at a time: echo of a 640x480 u8 payload each way vs Morphology dilate 3x3 on it
//     (p50, and the server's overhead = total - h2d - kernel - d2h from the timing trailer);
//   - the same dilation one call at a time through local shared memory: the 640x480 inputs and
//     their results in a POSIX shared-memory object registered with the server (started with
//     --shared_memory), the RPC carrying only region, offset and shape (p50; its result checked
//     against the inline call's);
//   - `--concurrency` calls in flight over `--channels` connections for `--load_seconds`: both
//     throughputs and cuimg's p50/p99. `--load_api=callback` (the default) keeps the calls in
//     flight on gRPC's callback API; `sync` blocks a thread per call, which on the H200 host held
//     the echo to 10-17k calls/s where the callback client measured 22-27k (BENCHMARKS.md);
//     `--load_preserialized` (the default) sends requests serialized once and checks replies by
//     size, since the driver shares the host's CPUs with the servers (runs 158-159);
//   - Morphology batches (issue 50: `--batch_shapes`, W x H x tiles per call) under
//     `--batch_concurrency` calls in flight against the echo moving the same bytes
//     (batch_transport.h): images/s of both;
//   - a 512x512x300 i16 volume (157 MB): echoed in 1 MiB chunks on one stream vs dilated with a
//     9x9 disk through ProcessVolumeStream (slabs of each `--slab_slices`), median of
//     `--volume_runs`; the first streamed result is checked against the unary Morphology result
//     byte for byte; stage_overlap = (h2d + kernel + d2h summed over slabs) / the stream's server
//     wall time: above 1 only when slabs' copies and kernels ran at the same time.
// One JSON line per comparison ({"impl": "transport", ...}; benchmarks/summarize.py tables them).
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "benchmarks/echo/batch_transport.h"
#include "benchmarks/echo/transport_harness.h"
#include "benchmarks/echo/volume_transport.h"
#include "cuimg/common/lock_order_checks.h"
#include "cuimg/v1/imaging_service.grpc.pb.h"
#include "echo/echo.grpc.pb.h"
#include "server/transport_settings.h"
#include "tests/testing/shm_object.h"

ABSL_FLAG(std::string, echo_target, "", "The echo server.");
ABSL_FLAG(std::string, cuimg_target, "", "The cuimg server.");
ABSL_FLAG(std::string, label, "default", "Names the transport settings in the output.");
ABSL_FLAG(int, http2_lookahead_bytes, 0, "Client channels' lookahead (0 = gRPC's default).");
ABSL_FLAG(int, requests, 2000, "Calls per one-at-a-time measurement (after 200 warm-up).");
ABSL_FLAG(int, concurrency, 64, "Calls in flight under load.");
ABSL_FLAG(int, channels, 64, "Connections the load spreads over.");
ABSL_FLAG(std::string, load_api, "callback",
          "How the load's calls are made: \"sync\" (a thread per call in flight, blocking calls) "
          "or \"callback\" (gRPC's callback API: each call's completion issues the next).");
ABSL_FLAG(bool, load_preserialized, true,
          "With --load_api=callback: each request is serialized once and sent by reference "
          "(gRPC's generic stub), and replies are checked by size, not parsed, so that the "
          "driver's own copies leave the host's CPUs to the servers; false serializes and parses "
          "protobuf messages per call, as this driver did before run 158.");
ABSL_FLAG(bool, lock_order_checks, false,
          "Keep Abseil's lock-order checks on in this driver (cuimg/common/lock_order_checks.h).");
ABSL_FLAG(double, load_seconds, 5, "Seconds per load measurement (after 1 s warm-up).");
ABSL_FLAG(std::string, slab_slices, "2,16", "Streamed volume slab sizes, slices.");
ABSL_FLAG(std::string, batch_shapes, "64x64x256,256x256x64",
          "Batch rows: W x H x tiles per call (u8, dilate 3x3), comma-separated; empty skips.");
ABSL_FLAG(int, batch_concurrency, 16, "Batch calls in flight.");
ABSL_FLAG(int, batch_rounds, 1,
          "Measurements of each server a batch row, in turns; the row reports their mean.");
ABSL_FLAG(int, batch_check_every, 16,
          "Batch rows: one cuimg reply in this many parsed and checked entry by entry (1: every "
          "one), the others checked by length.");
ABSL_FLAG(int, volume_runs, 5,
          "Timed runs per volume measurement (after one warm-up); 0 skips the volume rows.");
ABSL_FLAG(std::string, volume_streams, "4",
          "Streams (each on its own connection) the client's StreamVolume splits the volume over, "
          "as `cuimg --volume_streams` does; slabs of the first --slab_slices size.");

namespace {

using cuimg::bench::Call;
using cuimg::bench::Dilate;
using cuimg::bench::EchoMessage;
using cuimg::bench::Load;
using cuimg::bench::Percentile;
using cuimg::bench::RandomBytes;
using cuimg::bench::Report;
using cuimg::bench::RunLoad;
using cuimg::bench::RunLoadCallback;
using cuimg::bench::RunSequential;
using cuimg::bench::Sequential;
using cuimg::bench::ServerTimes;
using cuimg::bench::TimesOf;

std::shared_ptr<grpc::Channel> Channel(const std::string& target, int index) {
  grpc::ChannelArguments args;
  cuimg::TransportSettings settings;
  settings.http2_lookahead_bytes = absl::GetFlag(FLAGS_http2_lookahead_bytes);
  cuimg::ApplyTransportSettings(settings, &args);
  args.SetInt("cuimg.bench.channel_index", index);  // distinct arguments: a connection each
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

// `m` serialized once; a call sends it by reference (gRPC takes a slice reference, not a copy).
grpc::ByteBuffer Serialized(const google::protobuf::MessageLite& m) {
  grpc::Slice slice(m.SerializeAsString());
  return grpc::ByteBuffer(&slice, 1);
}

// The positive integers of a comma-separated flag value (other entries are skipped).
std::vector<int> PositiveInts(absl::string_view list) {
  std::vector<int> out;
  for (absl::string_view part : absl::StrSplit(list, ',')) {
    int v = 0;
    if (absl::SimpleAtoi(part, &v) && v >= 1) out.push_back(v);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  cuimg::SetLockOrderChecks(absl::GetFlag(FLAGS_lock_order_checks));
  const std::string load_api = absl::GetFlag(FLAGS_load_api);
  if (load_api != "callback" && load_api != "sync") {
    std::fprintf(stderr, "--load_api must be callback or sync, not \"%s\"\n", load_api.c_str());
    return 2;
  }
  const std::string label = absl::GetFlag(FLAGS_label);
  const int channels = std::max(1, absl::GetFlag(FLAGS_channels));
  std::vector<std::unique_ptr<cuimg::bench::Echo::Stub>> echo;
  std::vector<std::unique_ptr<cuimg::v1::Imaging::Stub>> imaging;
  std::vector<std::unique_ptr<grpc::GenericStub>> echo_generic, imaging_generic;
  for (int i = 0; i < channels; ++i) {
    const auto echo_channel = Channel(absl::GetFlag(FLAGS_echo_target), i);
    const auto imaging_channel = Channel(absl::GetFlag(FLAGS_cuimg_target), i);
    echo.push_back(cuimg::bench::Echo::NewStub(echo_channel));
    imaging.push_back(cuimg::v1::Imaging::NewStub(imaging_channel));
    echo_generic.push_back(std::make_unique<grpc::GenericStub>(echo_channel));
    imaging_generic.push_back(std::make_unique<grpc::GenericStub>(imaging_channel));
  }

  // 640x480 u8, one call at a time, then under load.
  constexpr int kW = 640, kH = 480;
  std::vector<EchoMessage> payloads(8);
  std::vector<cuimg::v1::MorphologyRequest> images;
  for (int i = 0; i < 8; ++i) {
    payloads[i].set_data(RandomBytes(kW * kH, 100 + i));
    images.push_back(Dilate(payloads[i].data(), kW, kH, 0, cuimg::v1::PIXEL_TYPE_U8,
                            cuimg::v1::ELEMENT_SHAPE_RECT, 3));
  }
  std::atomic<int> rotation{0};
  const Call echo_call = [&](int worker, ServerTimes*) {
    grpc::ClientContext ctx;
    EchoMessage reply;
    const grpc::Status s =
        echo[worker % channels]->Echo(&ctx, payloads[rotation++ % payloads.size()], &reply);
    return s.ok() && reply.data().size() == kW * kH;
  };
  const Call cuimg_call = [&](int worker, ServerTimes* times) {
    grpc::ClientContext ctx;
    cuimg::v1::MorphologyResponse reply;
    const grpc::Status s =
        imaging[worker % channels]->Morphology(&ctx, images[rotation++ % images.size()], &reply);
    if (times != nullptr) *times = TimesOf(ctx);
    if (!s.ok()) std::fprintf(stderr, "Morphology: %s\n", s.error_message().c_str());
    return s.ok() && reply.result().image().data().size() == kW * kH;
  };
  const int requests = absl::GetFlag(FLAGS_requests);
  const Sequential e = RunSequential(echo_call, requests);
  const Sequential c = RunSequential(cuimg_call, requests);
  std::vector<double> total, copies_kernel, overhead;
  for (const ServerTimes& t : c.server) {
    total.push_back(t.total);
    copies_kernel.push_back(t.h2d + t.kernel + t.d2h);
    overhead.push_back(t.total - t.h2d - t.kernel - t.d2h);
  }
  const double echo_p50 = Percentile(e.latency_us, 0.5), cuimg_p50 = Percentile(c.latency_us, 0.5);
  Report(
      "{\"impl\": \"transport\", \"workload\": \"unary_dilate3x3_640x480_u8\", \"settings\": "
      "\"%s\", "
      "\"requests\": %d, \"echo_p50_us\": %.1f, \"cuimg_p50_us\": %.1f, \"ratio\": %.3f, "
      "\"target_ratio\": 1.15, \"cuimg_p99_us\": %.1f, \"server_total_p50_us\": %.1f, "
      "\"server_copies_kernel_p50_us\": %.1f, \"server_overhead_p50_us\": %.1f, "
      "\"target_overhead_us\": 60, \"errors\": %d}",
      label.c_str(), requests, echo_p50, cuimg_p50, cuimg_p50 / echo_p50,
      Percentile(c.latency_us, 0.99), Percentile(total, 0.5), Percentile(copies_kernel, 0.5),
      Percentile(overhead, 0.5), e.errors + c.errors);

  // The same calls through shared memory: inputs i at i * frame, results at (8 + i) * frame.
  {
    const std::size_t frame = std::size_t{kW} * kH;
    cuimg::testing::ShmObject shm(2 * images.size() * frame);
    std::string region, check = "not run", error;
    bool device_mapped = false;
    if (!shm.ok()) {
      error = "could not create the shared-memory object";
    } else {
      for (std::size_t i = 0; i < images.size(); ++i) {
        std::memcpy(shm.data() + i * frame, payloads[i].data().data(), frame);
      }
      grpc::ClientContext ctx;
      cuimg::v1::RegisterSharedMemoryRequest request;
      request.set_key(shm.key());
      request.set_byte_size(shm.size());
      cuimg::v1::RegisterSharedMemoryResponse reply;
      const grpc::Status s = imaging[0]->RegisterSharedMemory(&ctx, request, &reply);
      if (!s.ok()) error = "RegisterSharedMemory: " + s.error_message();
      region = reply.region().handle();
      device_mapped = reply.region().device_mapped();
    }
    if (error.empty()) {
      std::vector<cuimg::v1::MorphologyRequest> shm_requests;
      for (std::size_t i = 0; i < images.size(); ++i) {
        cuimg::v1::MorphologyRequest r = images[i];
        cuimg::v1::Image shape = r.input().image();
        shape.clear_data();
        cuimg::v1::SharedMemoryImage* in = r.mutable_input()->mutable_shared_memory();
        in->set_region(region);
        in->set_offset(i * frame);
        *in->mutable_image() = std::move(shape);
        r.mutable_output()->mutable_shared_memory()->set_region(region);
        r.mutable_output()->mutable_shared_memory()->set_offset((images.size() + i) * frame);
        shm_requests.push_back(std::move(r));
      }
      std::atomic<int> shm_rotation{0};
      const Call shm_call = [&](int worker, ServerTimes* times) {
        grpc::ClientContext ctx;
        cuimg::v1::MorphologyResponse reply;
        const grpc::Status s = imaging[worker % channels]->Morphology(
            &ctx, shm_requests[shm_rotation++ % shm_requests.size()], &reply);
        if (times != nullptr) *times = TimesOf(ctx);
        if (!s.ok()) std::fprintf(stderr, "Morphology (shm): %s\n", s.error_message().c_str());
        return s.ok() && reply.result().image().data().empty() &&
               reply.result().image().width() == kW;
      };
      const Sequential m = RunSequential(shm_call, requests);
      // The transport floor of this call: the echo server with a message of the request's size.
      EchoMessage small;
      small.set_data(std::string(shm_requests[0].ByteSizeLong(), 'x'));
      const Call small_echo = [&](int worker, ServerTimes*) {
        grpc::ClientContext ctx;
        EchoMessage reply;
        return echo[worker % channels]->Echo(&ctx, small, &reply).ok() &&
               reply.data().size() == small.data().size();
      };
      const Sequential se = RunSequential(small_echo, requests);
      // The last inputs' results stay in the region: each must equal the inline call's.
      check = "shm == inline";
      for (std::size_t i = 0; i < images.size(); ++i) {
        grpc::ClientContext ctx;
        cuimg::v1::MorphologyResponse reply;
        const grpc::Status s = imaging[0]->Morphology(&ctx, images[i], &reply);
        const char* result =
            reinterpret_cast<const char*>(shm.data()) + (images.size() + i) * frame;
        if (!s.ok() || reply.result().image().data() != std::string(result, frame)) {
          check = "MISMATCH shm != inline";
        }
      }
      std::vector<double> m_total, m_copies, m_overhead;
      for (const ServerTimes& t : m.server) {
        m_total.push_back(t.total);
        m_copies.push_back(t.h2d + t.kernel + t.d2h);
        m_overhead.push_back(t.total - t.h2d - t.kernel - t.d2h);
      }
      Report(
          "{\"impl\": \"transport\", \"workload\": \"shm_dilate3x3_640x480_u8\", "
          "\"settings\": \"%s\", \"requests\": %d, \"cuimg_p50_us\": %.1f, "
          "\"target_p50_us\": 150, \"cuimg_p99_us\": %.1f, \"inline_p50_us\": %.1f, "
          "\"echo_p50_us\": %.1f, \"echo_request_size_p50_us\": %.1f, "
          "\"server_total_p50_us\": %.1f, "
          "\"server_copies_kernel_p50_us\": %.1f, \"server_overhead_p50_us\": %.1f, "
          "\"device_mapped\": %s, \"check\": \"%s\", \"errors\": %d}",
          label.c_str(), requests, Percentile(m.latency_us, 0.5), Percentile(m.latency_us, 0.99),
          cuimg_p50, echo_p50, Percentile(se.latency_us, 0.5), Percentile(m_total, 0.5),
          Percentile(m_copies, 0.5), Percentile(m_overhead, 0.5), device_mapped ? "true" : "false",
          check.c_str(), m.errors + se.errors);
      grpc::ClientContext ctx;
      cuimg::v1::UnregisterSharedMemoryRequest unregister;
      unregister.set_handle(region);
      cuimg::v1::UnregisterSharedMemoryResponse done;
      (void)imaging[0]->UnregisterSharedMemory(&ctx, unregister, &done);
    } else {
      Report(
          "{\"impl\": \"transport\", \"workload\": \"shm_dilate3x3_640x480_u8\", "
          "\"settings\": \"%s\", \"error\": \"%s\"}",
          label.c_str(), error.substr(0, 200).c_str());
    }
  }

  const int concurrency = absl::GetFlag(FLAGS_concurrency);
  const double seconds = absl::GetFlag(FLAGS_load_seconds);
  Load el, cl;
  const bool preserialized = load_api == "callback" && absl::GetFlag(FLAGS_load_preserialized);
  if (preserialized) {
    std::vector<grpc::ByteBuffer> echo_requests, cuimg_requests;
    for (std::size_t i = 0; i < images.size(); ++i) {
      echo_requests.push_back(Serialized(payloads[i]));
      cuimg_requests.push_back(Serialized(images[i]));
    }
    std::vector<grpc::ByteBuffer> replies(concurrency);  // one per slot, read by its completion
    // Both replies carry the 640x480 pixels and a few bytes of framing (cuimg's also the shape):
    // an OK status and at least that many bytes.
    const auto generic = [&](std::vector<std::unique_ptr<grpc::GenericStub>>* stubs,
                             const char* method, const std::vector<grpc::ByteBuffer>* requests) {
      return [&replies, &channels, stubs, method, requests](int k, grpc::ClientContext* ctx,
                                                            std::function<void(bool)> done) {
        grpc::ByteBuffer* reply = &replies[k];
        (*stubs)[k % channels]->UnaryCall(
            ctx, method, grpc::StubOptions(), &(*requests)[k % requests->size()], reply,
            [reply, done](grpc::Status s) { done(s.ok() && reply->Length() >= kW * kH); });
      };
    };
    el = RunLoadCallback(generic(&echo_generic, "/cuimg.bench.Echo/Echo", &echo_requests),
                         concurrency, seconds);
    cl = RunLoadCallback(generic(&imaging_generic, "/cuimg.v1.Imaging/Morphology", &cuimg_requests),
                         concurrency, seconds);
  } else if (load_api == "callback") {
    // Each slot keeps its response until the call's completion has read it; one per slot.
    std::vector<EchoMessage> echo_replies(concurrency);
    std::vector<cuimg::v1::MorphologyResponse> cuimg_replies(concurrency);
    el = RunLoadCallback(
        [&](int k, grpc::ClientContext* ctx, std::function<void(bool)> done) {
          EchoMessage* reply = &echo_replies[k];
          echo[k % channels]->async()->Echo(
              ctx, &payloads[k % payloads.size()], reply,
              [reply, done](grpc::Status s) { done(s.ok() && reply->data().size() == kW * kH); });
        },
        concurrency, seconds);
    cl = RunLoadCallback(
        [&](int k, grpc::ClientContext* ctx, std::function<void(bool)> done) {
          cuimg::v1::MorphologyResponse* reply = &cuimg_replies[k];
          imaging[k % channels]->async()->Morphology(
              ctx, &images[k % images.size()], reply, [reply, done](grpc::Status s) {
                done(s.ok() && reply->result().image().data().size() == kW * kH);
              });
        },
        concurrency, seconds);
  } else {
    el = RunLoad(echo_call, concurrency, seconds);
    cl = RunLoad(cuimg_call, concurrency, seconds);
  }
  Report(
      "{\"impl\": \"transport\", \"workload\": \"load_dilate3x3_640x480_u8\", \"settings\": "
      "\"%s\", "
      "\"load_api\": \"%s\", \"preserialized\": %s, \"concurrency\": %d, \"channels\": %d, "
      "\"echo_rps\": %.0f, \"cuimg_rps\": %.0f, "
      "\"ratio\": %.3f, \"target_ratio\": 0.9, \"echo_p99_ms\": %.2f, \"cuimg_p50_ms\": %.2f, "
      "\"cuimg_p99_ms\": %.2f, \"target_p99_ms\": 5, \"cuimg_queue_p50_us\": %.1f, "
      "\"cuimg_server_p50_us\": %.1f, \"errors\": %ld}",
      label.c_str(), load_api.c_str(), preserialized ? "true" : "false", concurrency, channels,
      el.rps, cl.rps, cl.rps / el.rps, el.p99_ms, cl.p50_ms, cl.p99_ms, cl.queue_p50_us,
      cl.server_p50_us, el.errors + cl.errors);

  cuimg::bench::BatchTransportRun batches;
  for (int i = 0; i < channels; ++i) {
    batches.echo.push_back(echo_generic[i].get());
    batches.imaging.push_back(imaging_generic[i].get());
  }
  batches.label = label;
  batches.shapes = cuimg::bench::ParseBatchShapes(absl::GetFlag(FLAGS_batch_shapes));
  batches.concurrency = std::max(1, absl::GetFlag(FLAGS_batch_concurrency));
  batches.seconds = seconds;
  batches.rounds = absl::GetFlag(FLAGS_batch_rounds);
  batches.check_every = absl::GetFlag(FLAGS_batch_check_every);
  cuimg::bench::MeasureBatchTransport(batches);

  // The 157 MB volume: echo in 1 MiB chunks on one stream vs ProcessVolumeStream.
  cuimg::bench::VolumeTransportRun volume;
  volume.runs = absl::GetFlag(FLAGS_volume_runs);
  if (volume.runs <= 0) return 0;
  volume.echo = echo[0].get();
  volume.imaging = imaging[0].get();
  volume.label = label;
  volume.slab_sizes = PositiveInts(absl::GetFlag(FLAGS_slab_slices));
  volume.stream_counts = PositiveInts(absl::GetFlag(FLAGS_volume_streams));
  volume.cuimg_channel = [](int index) {
    return Channel(absl::GetFlag(FLAGS_cuimg_target), index);
  };
  cuimg::bench::MeasureVolumeTransport(volume);
  return 0;
}
