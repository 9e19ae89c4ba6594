#include "benchmarks/echo/volume_transport.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/echo/transport_harness.h"
#include "client/commands/volume_stream.h"
#include "cuimg/common/image.h"

namespace cuimg::bench {

void MeasureVolumeTransport(const VolumeTransportRun& run) {
  constexpr int kVW = 512, kVH = 512, kVD = 300;
  const std::size_t slice = std::size_t{kVW} * kVH * 2;
  const std::string volume = RandomBytes(slice * kVD, 7);
  std::vector<EchoMessage> chunks;
  for (std::size_t off = 0; off < volume.size(); off += 1 << 20) {
    chunks.emplace_back();
    chunks.back().set_data(volume.substr(off, 1 << 20));
  }
  std::vector<double> echo_ms;
  bool echo_ok = true;
  for (int r = 0; r <= run.runs; ++r) {
    grpc::ClientContext ctx;
    auto stream = run.echo->EchoStream(&ctx);
    EchoMessage reply;
    const auto start = Clock::now();
    const std::size_t got = Pump(
        stream.get(), chunks, &reply, +[](const EchoMessage& m) { return m.data().size(); });
    const bool ok = stream->Finish().ok() && got == volume.size();
    echo_ok = echo_ok && ok;
    if (r > 0) echo_ms.push_back(Us(Clock::now() - start) * 1e-3);
  }
  // The unary result once, to check the streamed one against.
  std::string unary;
  {
    grpc::ClientContext ctx;
    cuimg::v1::MorphologyResponse reply;
    const grpc::Status s =
        run.imaging->Morphology(&ctx,
                                Dilate(volume, kVW, kVH, kVD, cuimg::v1::PIXEL_TYPE_I16,
                                       cuimg::v1::ELEMENT_SHAPE_ELLIPSE, 9),
                                &reply);
    if (!s.ok()) std::fprintf(stderr, "unary volume: %s\n", s.error_message().c_str());
    unary = reply.result().image().data();
  }
  const std::vector<int>& slab_sizes = run.slab_sizes;
  for (const int slab_slices : slab_sizes) {
    std::vector<cuimg::v1::VolumeStreamRequest> messages(1);
    cuimg::v1::VolumeStreamHeader* header = messages[0].mutable_header();
    header->mutable_volume()->set_pixel_type(cuimg::v1::PIXEL_TYPE_I16);
    header->mutable_volume()->set_width(kVW);
    header->mutable_volume()->set_height(kVH);
    header->mutable_volume()->set_depth(kVD);
    *header->mutable_morphology() =
        Dilate("", kVW, kVH, kVD, cuimg::v1::PIXEL_TYPE_I16, cuimg::v1::ELEMENT_SHAPE_ELLIPSE, 9);
    header->mutable_morphology()->clear_input();
    for (int z = 0; z < kVD; z += slab_slices) {
      messages.emplace_back();
      messages.back().set_slab(volume.substr(z * slice, std::min(slab_slices, kVD - z) * slice));
    }
    std::vector<double> ms;
    std::string check = "not run";
    ServerTimes server;
    for (int r = 0; r <= run.runs; ++r) {
      grpc::ClientContext ctx;
      auto stream = run.imaging->ProcessVolumeStream(&ctx);
      std::string result;
      result.reserve(r == 0 ? volume.size() : 0);
      cuimg::v1::VolumeStreamResponse reply;
      const auto start = Clock::now();
      std::thread writer([&] {
        for (const auto& m : messages) {
          if (!stream->Write(m)) break;
        }
        stream->WritesDone();
      });
      std::size_t got = 0;
      while (stream->Read(&reply)) {
        got += reply.data().size();
        if (r == 0) result += reply.data();
      }
      writer.join();
      const grpc::Status s = stream->Finish();
      const double elapsed = Us(Clock::now() - start) * 1e-3;
      if (!s.ok()) {
        check = "error: " + s.error_message();
        break;
      }
      if (r == 0) {
        check = unary.empty()     ? "no unary result"
                : result == unary ? "streamed == unary"
                                  : "MISMATCH streamed != unary";
      } else {
        ms.push_back(elapsed);
        server = TimesOf(ctx);
      }
      (void)got;
    }
    Report(
        "{\"impl\": \"transport\", \"workload\": \"stream_dilate_disk9_512x512x300_i16\", "
        "\"settings\": \"%s\", \"slab_slices\": %d, \"slab_mb\": %.2f, \"echo_chunk_mb\": 1, "
        "\"echo_ms\": %.1f, \"cuimg_ms\": %.1f, \"ratio\": %.3f, \"target_ms\": 120, "
        "\"server_total_ms\": %.1f, \"server_kernel_ms\": %.1f, \"server_h2d_ms\": %.1f, "
        "\"server_d2h_ms\": %.1f, \"stage_overlap\": %.2f, \"check\": \"%s\", "
        "\"echo_ok\": %s}",
        run.label.c_str(), slab_slices, slab_slices * slice / 1048576.0, Percentile(echo_ms, 0.5),
        Percentile(ms, 0.5), Percentile(ms, 0.5) / Percentile(echo_ms, 0.5), server.total * 1e-3,
        server.kernel * 1e-3, server.h2d * 1e-3, server.d2h * 1e-3,
        server.total > 0 ? (server.h2d + server.kernel + server.d2h) / server.total : 0.0,
        check.c_str(), echo_ok ? "true" : "false");
  }
  // The same volume through the client library over several streams at once (each carries a
  // z range; a 2D element needs no halo between them), timed with the client's own slab copies.
  const int first_slab = slab_sizes.empty() ? 2 : slab_sizes[0];
  cuimg::Image image(cuimg::PixelType::kI16, cuimg::Extent{kVW, kVH, kVD}, 1,
                     cuimg::Image::kUninitialized);
  std::memcpy(image.bytes(), volume.data(), volume.size());
  for (const int streams : run.stream_counts) {
    std::vector<std::shared_ptr<grpc::Channel>> channels;
    for (int k = 0; k < streams; ++k) {  // connections of their own
      channels.push_back(run.cuimg_channel(1000 + k));
    }
    cuimg::v1::VolumeStreamHeader header;
    *header.mutable_morphology() =
        Dilate("", kVW, kVH, kVD, cuimg::v1::PIXEL_TYPE_I16, cuimg::v1::ELEMENT_SHAPE_ELLIPSE, 9);
    header.mutable_morphology()->clear_input();
    cuimg::ConnectionOptions connection;
    connection.timeout_seconds = 120;
    std::vector<double> ms;
    std::vector<double> server_ms;
    std::string check = "not run";
    int resent = 0;  // streams sent again after a connection failure, over every run
    for (int r = 0; r <= run.runs; ++r) {
      const auto start = Clock::now();
      absl::StatusOr<cuimg::StreamedVolume> out =
          cuimg::StreamVolume(channels, connection, header, image, first_slab);
      const double elapsed = Us(Clock::now() - start) * 1e-3;
      if (!out.ok()) {
        check = "error: " + std::string(out.status().message());
        break;
      }
      for (const int attempts : out->stream_attempts) resent += attempts > 1;
      if (r == 0) {
        const auto& plane = out->planes[0];
        check =
            unary.empty() ? "no unary result"
            : std::string(reinterpret_cast<const char*>(plane.bytes()), plane.size_bytes()) == unary
                ? "streamed == unary"
                : "MISMATCH streamed != unary";
        continue;
      }
      ms.push_back(elapsed);
      double slowest = 0;  // the streams run at once: the slowest one's server time
      for (const std::string& t : out->stream_timings) {
        slowest = std::max(slowest, TimesOf(t).total * 1e-3);
      }
      server_ms.push_back(slowest);
    }
    Report(
        "{\"impl\": \"transport\", \"workload\": \"stream_dilate_disk9_512x512x300_i16\", "
        "\"settings\": \"%s\", \"slab_slices\": %d, \"slab_mb\": %.2f, \"streams\": %d, "
        "\"echo_chunk_mb\": 1, \"echo_ms\": %.1f, \"cuimg_ms\": %.1f, \"ratio\": %.3f, "
        "\"target_ms\": 120, \"server_total_ms\": %.1f, \"resent_streams\": %d, "
        "\"check\": \"%s\", \"echo_ok\": %s}",
        run.label.c_str(), first_slab, first_slab * slice / 1048576.0, streams,
        Percentile(echo_ms, 0.5), Percentile(ms, 0.5),
        Percentile(ms, 0.5) / Percentile(echo_ms, 0.5), Percentile(server_ms, 0.5), resent,
        check.c_str(), echo_ok ? "true" : "false");
  }
}

}  // namespace cuimg::bench
