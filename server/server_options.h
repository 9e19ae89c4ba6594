// Every tunable of the server, with its default, and its version. main.cc fills the options from
// flags; libraries and tests construct them directly and never read flags.
#ifndef CUIMG_SERVER_SERVER_OPTIONS_H_
#define CUIMG_SERVER_SERVER_OPTIONS_H_

#include <cstdint>
#include <string>

namespace cuimg {

// The server's version, as its startup log, its build-info metric and GetServerInfo report it.
inline constexpr char kVersion[] = "0.1.0";

enum class BackendKind { kAuto, kCuda, kCpu };

// How a thread waiting for the GPU waits (the CUDA context's scheduling flag): kAuto leaves it to
// CUDA (spin while the process has fewer contexts than cores, else yield), kSpin polls on its
// core, kYield polls but lets other runnable threads have the core, kBlock sleeps until the GPU's
// interrupt wakes it.
enum class CudaSync { kAuto, kSpin, kYield, kBlock };

// Where JPEG inputs decode on the CUDA backend: nvJPEG when it loads (kAuto), nvJPEG or a
// start-up failure (kGpu), always libjpeg-turbo (kCpu). The CPU backend decodes on the CPU.
enum class JpegDecoderChoice { kAuto, kGpu, kCpu };

// Per-request limits, enforced by validation before anything is allocated.
struct RequestLimits {
  std::int64_t max_pixels = std::int64_t{1} << 30;  // width * height * depth per image
  int max_side = 65536;                             // each of width, height, depth
  int max_element_extent = 1023;                    // structuring element, per axis
  int max_steps = 64;                               // morphology chain length
  int max_iterations = 1000;                        // per morphology step
  int max_pyramid_levels = 64;
  std::int64_t max_mesh_vertices = std::int64_t{1} << 24;
  // PNG/JPEG inputs, checked against the file's header before the pixels are allocated: a few
  // kilobytes of compressed zeros can otherwise claim gigabytes (a decompression bomb).
  std::int64_t max_decoded_pixels = std::int64_t{1} << 26;
  // Batches (types.proto): entries one call may carry, and their inputs' bytes together (each
  // entry's pixels as decoded); more is INVALID_ARGUMENT naming `inputs` and the flag. 256
  // entries of 256x256 f32 are 64 MiB.
  int max_batch_inputs = 4096;
  std::uint64_t max_batch_bytes = std::uint64_t{256} << 20;
};

// Who may call, over what transport. Empty paths disable the feature.
struct SecurityOptions {
  // PEM server certificate chain and private key: TLS on the gRPC port.
  std::string tls_cert_file;
  std::string tls_key_file;
  // PEM CA bundle that client certificates must chain to (mTLS).
  std::string tls_client_ca_file;
  // Refuse connections without a valid client certificate (needs tls_client_ca_file).
  bool require_client_cert = false;
  // Bearer tokens, one "IDENTITY TOKEN [RIGHTS]" per line (auth_tokens.h); needs TLS.
  std::string auth_tokens_file;
  // With tokens: health and reflection need a valid token too (off: they stay open, so that
  // probes and grpcurl work without one).
  bool auth_health_and_reflection = false;
  // Plaintext address serving only grpc.health.v1 (and reflection), for probes that cannot do TLS
  // (Kubernetes' gRPC probes). Empty: none.
  std::string health_listen_address;
};

// Test-only fault injection: device `device` fails the request after `after_requests` requests
// and stays unhealthy for `duration_ms` (0: until restart), as a sticky device error would.
struct FaultInjection {
  int device = -1;  // -1: none
  int after_requests = 0;
  int duration_ms = 0;
};

// Local shared memory (shared_memory.proto): clients on this host pass pixels through POSIX
// shared-memory objects they register. Off by default: a registered name is opened with the
// server's own permissions (SECURITY.md).
struct SharedMemoryOptions {
  bool enabled = false;
  // Bytes and regions one identity may have registered at once.
  std::uint64_t max_bytes_per_identity = std::uint64_t{4} << 30;
  std::uint32_t max_regions_per_identity = 16;
};

struct ServerOptions {
  std::string listen_address = "0.0.0.0:50051";
  // Prometheus /metrics; empty disables the exposer.
  std::string metrics_address = "0.0.0.0:9464";
  BackendKind backend = BackendKind::kAuto;
  // Largest request message accepted (gRPC's receive limit), bytes.
  int max_receive_message_bytes = 1 << 30;
  // HTTP/2 per-stream lookahead (transport_settings.h); 0 keeps gRPC's default.
  int http2_lookahead_bytes = 0;
  // Threads that execute requests (GPU submission or CPU compute); main resolves its flag's 0
  // (a core each up to 16 on the CUDA backend, 4 on the CPU backend).
  int worker_threads = 4;
  // How long an idle worker polls for the next request before sleeping (one worker at a time):
  // trades at most one core's idle time for the tens of microseconds a sleeping thread takes to
  // wake. 0: workers sleep at once.
  int worker_spin_us = 0;
  // CPUs kept from idling while a worker polls (cpu_warmer.h; -1: every CPU the server may use,
  // 0: none). Needs worker_spin_us > 0.
  int warm_cpus = 0;
  // How workers wait for their streams (CUDA backend).
  CudaSync cuda_sync = CudaSync::kAuto;
  JpegDecoderChoice jpeg_decoder = JpegDecoderChoice::kAuto;
  // Threads a JPEG decode may borrow while idle, to decode one image in strips (0: serial); DICOM
  // frames borrow them to decode several frames at once.
  int decode_threads = 0;
  // The helper that decodes DICOM frames whose decoders may abort (codec/frame_sandbox.h):
  // empty, cuimg-frame-decoder beside the server (then the build's). Without it such frames (HT
  // codestreams, JPEG-LS) are refused and GetServerInfo leaves their syntaxes out.
  std::string frame_decoder_path;
  // A helper that spends longer on one frame is killed and the frame refused.
  int frame_decode_timeout_ms = 20000;
  // Requests admitted at once (executing or queued); beyond this RESOURCE_EXHAUSTED.
  int max_inflight_requests = 64;
  // Frames one DetectStream holds at most (received and not yet answered); at the bound it reads
  // no more, so flow control holds the client back.
  // 16: one 768x576 stream then keeps the decode batches full (H200, run B of 2026-12-02: 6,647
  // frames/s with 16 unanswered against 2,987 with 4, p99 2.7 ms); each frame is still admitted
  // and priced on its own.
  int stream_frames_in_flight = 16;
  // Host bytes a device's admitted requests may hold at once (request, decoded input and results,
  // estimated at admission; open uploads count too). The server admits up to this times the
  // device count; a request needing more than this alone is refused.
  std::uint64_t max_inflight_bytes_per_device = std::uint64_t{4} << 30;
  // Threads the CPU backend uses per request (0 = all cores).
  int cpu_threads_per_request = 0;
  // Devices the CPU backend presents (scheduling units, for multi-device behaviour without GPUs).
  int cpu_devices = 1;
  // Bytes of device memory each GPU's buffer cache may hold (leased + idle).
  std::uint64_t device_cache_bytes = std::uint64_t{8} << 30;
  // Hard cap on device memory a GPU's requests may lease at once (0: the device's own size).
  // Beyond it requests get RESOURCE_EXHAUSTED instead of running the device out of memory.
  std::uint64_t device_memory_limit_bytes = 0;
  // Page-locked host memory each GPU may hold for staging copies from and to request bytes, in
  // chunks of pinned_staging_chunk_bytes (kept once allocated); 0 disables staging.
  std::uint64_t pinned_staging_bytes = std::uint64_t{256} << 20;
  std::uint64_t pinned_staging_chunk_bytes = std::uint64_t{4} << 20;
  // Page-locked host memory (for all GPUs together) that holds requests' and responses' pixels
  // between gRPC and the device, in size classes from pinned_message_min_bytes up to the first
  // holding pinned_message_max_bytes (kept once allocated; pinned_message_pool.h); larger
  // pixels, or any once it is spent, use the heap and staging. 0: always the heap. The defaults
  // hold a 512x512x300 i16 volume's input and result (2 x 160 MiB): with the two on the heap,
  // that volume's unary h2d and d2h took 133 + 131 ms on an H100 (issue #34).
  std::uint64_t pinned_message_bytes = std::uint64_t{512} << 20;
  std::uint64_t pinned_message_min_bytes = std::uint64_t{64} << 10;
  std::uint64_t pinned_message_max_bytes = std::uint64_t{256} << 20;
  // How often device health is re-evaluated, milliseconds.
  int health_poll_ms = 250;
  FaultInjection fault;
  // On SIGTERM/SIGINT, in-flight requests get this long to finish.
  int shutdown_grace_seconds = 30;
  // Resident objects: byte budget per client identity, default and maximum TTL.
  std::uint64_t resident_budget_bytes = std::uint64_t{4} << 30;
  std::uint32_t resident_ttl_seconds = 600;
  std::uint32_t resident_max_ttl_seconds = 86400;
  // Detector models (*.hogsvm) loaded at start-up; empty loads none (DetectPedestrians then
  // answers NOT_FOUND).
  std::string models_dir;
  // Not a tunable: the source commit, for cuimg_build_info's `commit` label (main.cc sets it from
  // the build, command_line.h's BuildCommit).
  std::string build_commit = "unknown";
  // Objects per identity (each costs bookkeeping beyond its bytes); the oldest is evicted beyond.
  std::uint32_t resident_max_objects = 4096;
  // Resident bytes of every identity together; an object that does not fit evicts only its own
  // identity's least recently used objects, else is refused. 0: no cap.
  std::uint64_t resident_max_total_bytes = std::uint64_t{16} << 30;
  // Uploads: a stream that receives nothing for upload_idle_timeout_ms is ended and what it held
  // freed; one identity may have max_uploads_per_identity streams open, declaring at most
  // max_upload_bytes_per_identity together (0: half the server's in-flight bytes, so that one
  // identity's uploads never hold the whole in-flight budget).
  int upload_idle_timeout_ms = 20000;
  int max_uploads_per_identity = 8;
  std::uint64_t max_upload_bytes_per_identity = 0;
  // Estimated work one request may take (work_estimate.h: operations per pixel of the backend's
  // algorithm, 1 to 4 ns each on a CPU core); more is refused with RESOURCE_EXHAUSTED. The
  // default, minutes of one core, refuses what could take hours or weeks (issue #38's 64 steps
  // of 1023x1023 elements on 4096x4096: 1e15 on the CPU backend, 2e12 on CUDA) and admits every
  // request of the README, the demo and the tests (at most 2.4e10) and a 4096x4096 dilation by
  // a 63x63 disk (5e10 on the CPU backend). 0: no cap.
  double max_request_work = 2e11;
  // Hits DetectPedestrians hands to grouping, which compares every pair; more is
  // INVALID_ARGUMENT naming hit_threshold. 0: no cap. Measured on the CPU backend here: 640x480
  // frames at default parameters have 7-8 hits (of 25132 windows); grouping 25132 hits took
  // 2.4 s and 65584 took 49 s, so 10000 is about 0.4 s.
  std::uint64_t max_grouped_hits = 10000;
  // Batches the server forms itself of work that is cheaper together (hardware JPEG decodes and
  // HOG launches, leader_batch.h, detect_batcher.h; 1 turns each off): at most batch_max_size
  // decodes a batch, batch_lanes batches at once per device. The engines decode 1080p frames in
  // rounds of 7 (H200: a batch of 7 in 1.73 ms, 8 in 2.21 ms; two calls of 7 at once overlap to
  // 6,603 frames/s), so 7 and 2 (BENCHMARKS.md, "the JPEG engines' rounds"). A batch with a lane
  // free waits up to batch_max_delay_us for items already on their way to it (never when none
  // is, so a lone call keeps its latency). 0: never waits.
  int batch_max_size = 7;
  int batch_max_delay_us = 200;
  int batch_lanes = 2;
  // HOG launches shared by DetectPedestrians frames that reach a device together
  // (detect_batcher.h): up to detect_batch_max_size frames a batch, detect_batch_lanes batches at
  // once (each with its own workspace), waiting as batch_max_delay_us says; 1: none. On the H200
  // with the decode batches above, 7 and 2 served 3,080-3,084 1080p frames/s at 32 in flight
  // against 2,940-3,016 without HOG batches, and DetectStream's 768x576 frames at 12 unanswered
  // 5,776/s (p99 2.91 ms) against 5,295 (p99 3.55) with one lane.
  int detect_batch_max_size = 7;
  int detect_batch_lanes = 2;
  RequestLimits limits;
  SecurityOptions security;
  SharedMemoryOptions shared_memory;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_SERVER_OPTIONS_H_
