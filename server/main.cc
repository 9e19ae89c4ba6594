// cuimg-server: flags, start-up summary, and graceful shutdown on SIGTERM/SIGINT/SIGHUP.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cuimg/common/command_line.h"
#include "cuimg/common/lock_order_checks.h"
#include "cuimg/common/malloc_policy.h"
#include "server/backend/backend.h"
#include "server/flag_values.h"
#include "server/grpc_server.h"
#include "server/observability/grpc_log_sink.h"
#include "server/observability/log.h"
#include "server/server_options.h"

ABSL_FLAG(std::string, listen_address, "0.0.0.0:50051",
          "gRPC address (host:port; port 0 picks a free port).");
ABSL_FLAG(std::string, metrics_address, "0.0.0.0:9464",
          "Prometheus /metrics address (host:port); empty disables it.");
ABSL_FLAG(std::string, backend, "auto",
          "auto (CUDA when a usable GPU exists, else CPU, with a warning and "
          "cuimg_backend_info{backend=\"cpu\"}), cuda, or cpu.");
ABSL_FLAG(bool, require_gpu, false,
          "Exit 1 at start-up instead of serving on the CPU backend when --backend=auto finds no "
          "usable GPU (a GPU node whose driver is missing).");
ABSL_FLAG(int, worker_threads, 0,
          "Threads executing requests. 0: on the CUDA backend one per core, at most 16 (the "
          "kernels and JPEG decodes of several requests overlap: 1080p JPEG detection at 16 calls "
          "in flight 1750 frames/s against 1200 with 4 workers on an H100); on the CPU backend 4 "
          "(each request already uses every core).");
ABSL_FLAG(int, worker_spin_us, 0,
          "Microseconds an idle worker polls for the next request before sleeping (one worker "
          "polls at a time: at most one core busy while idle); 0 sleeps at once.");
ABSL_FLAG(int, warm_cpus, 0,
          "While a worker polls (--worker_spin_us), keep this many CPUs from idling (-1: every "
          "CPU the server may use) with one lowest-priority (SCHED_IDLE) polling thread each. "
          "On a virtual machine a thread woken on a CPU idle for longer than the host's "
          "halt-polling window starts tens of microseconds later; this spends those CPUs' idle "
          "time while requests arrive. Under a CPU limit (a container's CFS quota) the polling "
          "counts against the quota: use it on dedicated cores. 0: off.");
ABSL_FLAG(std::string, cuda_sync, "auto",
          "How a worker waits for the GPU: auto (CUDA's choice: spin with fewer GPUs than "
          "cores), spin (polls; a core per waiting worker), yield (polls, giving the core to "
          "other runnable threads) or block (sleeps until the GPU's interrupt).");
ABSL_FLAG(std::string, jpeg_decoder, "auto",
          "Where JPEG inputs decode on the CUDA backend: auto (nvJPEG straight into device "
          "memory when libnvjpeg.so.13 loads, else libjpeg-turbo on the CPU), gpu (nvJPEG, or "
          "exit 1 at start-up without it or on the CPU backend) or cpu (always libjpeg-turbo). "
          "Files nvJPEG cannot take (progressive on the hardware decoder, CMYK, 12-bit, "
          "arithmetic coding) decode on the CPU either way. The start-up line says which.");
ABSL_FLAG(int, decode_threads, -1,
          "Threads a JPEG decode borrows while they are idle to decode one image in strips "
          "(same pixels, lower latency on an idle server; serial under load). -1: the cores "
          "less one, at most 15; 0: serial.");
ABSL_FLAG(std::string, frame_decoder, "",
          "The helper that decodes DICOM frames whose decoders may abort on malformed input "
          "(HTJ2K codestreams, JPEG-LS): a path, or empty for cuimg-frame-decoder beside this "
          "server. Without it such frames are refused (GetServerInfo leaves their syntaxes out).");
ABSL_FLAG(int, max_inflight_requests, 64,
          "Requests admitted at once; more get RESOURCE_EXHAUSTED.");
ABSL_FLAG(int, stream_frames_in_flight, 16,
          "Frames one DetectStream holds at most (received, not yet answered), in [1, 64]; at "
          "the bound the server reads no more of that stream (flow control holds the client).");
ABSL_FLAG(int, cpu_threads_per_request, 0, "CPU backend threads per request (0 = all cores).");
ABSL_FLAG(int, cpu_devices, 1,
          "Scheduling units the CPU backend presents (multi-device behaviour without GPUs).");
ABSL_FLAG(uint64_t, max_inflight_bytes_per_device, uint64_t{4} << 30,
          "Host bytes (request, decoded input, results; open uploads too) that admitted requests "
          "may hold per device; more get RESOURCE_EXHAUSTED, and a request needing more alone is "
          "refused.");
ABSL_FLAG(uint64_t, device_cache_bytes, uint64_t{8} << 30,
          "Device memory each GPU's buffer cache may hold (leased + idle), bytes.");
ABSL_FLAG(uint64_t, device_memory_limit_bytes, 0,
          "Device memory a GPU's requests may lease at once, bytes (0 = the device's size); over "
          "it requests get RESOURCE_EXHAUSTED.");
ABSL_FLAG(uint64_t, pinned_staging_bytes, uint64_t{256} << 20,
          "Page-locked host memory per GPU for staging copies of request bytes, bytes (0 = copy "
          "from pageable memory).");
ABSL_FLAG(uint64_t, pinned_staging_chunk_bytes, uint64_t{4} << 20,
          "Size of one pinned staging chunk, bytes; a copy cycles through up to 3.");
ABSL_FLAG(uint64_t, pinned_message_bytes, uint64_t{512} << 20,
          "Page-locked host memory (all GPUs) holding request and response pixels between gRPC "
          "and the device, bytes (0 = the heap, copied through staging).");
ABSL_FLAG(uint64_t, pinned_message_min_bytes, uint64_t{64} << 10,
          "Smallest pinned message buffer, bytes; sizes double from it up to 16 MiB, then grow "
          "by quarter octaves.");
ABSL_FLAG(uint64_t, pinned_message_max_bytes, uint64_t{256} << 20,
          "Largest pixels a pinned message buffer holds, bytes (a CT volume's); larger ones use "
          "the heap.");
ABSL_FLAG(bool, shared_memory, false,
          "Let clients on this host register POSIX shared-memory objects and pass pixels through "
          "them (opened with the server's permissions: see SECURITY.md).");
ABSL_FLAG(uint64_t, shared_memory_max_bytes_per_identity, uint64_t{4} << 30,
          "Shared-memory bytes one identity may have registered at once.");
ABSL_FLAG(uint32_t, shared_memory_max_regions, 16,
          "Shared-memory regions one identity may have registered at once.");
ABSL_FLAG(int, malloc_arena_max, 4,
          "Most glibc malloc arenas (0: glibc's default of 8 per core); fewer arenas retain less "
          "freed memory under many threads (cuimg/common/malloc_policy.h).");
ABSL_FLAG(bool, malloc_huge_pages, false,
          "Start again with glibc's malloc asking for transparent huge pages (GLIBC_TUNABLES "
          "glibc.malloc.hugetlb=1): fewer page faults receiving big messages, but stalls of "
          "~0.3 s were seen on a small machine (cuimg/common/malloc_policy.h). A "
          "glibc.malloc.hugetlb already in GLIBC_TUNABLES wins.");
ABSL_FLAG(int, malloc_trim_interval_ms, 1000,
          "How often freed heap pages are handed back to the system (malloc_trim); 0 never.");
ABSL_FLAG(
    bool, lock_order_checks, false,
    "Keep Abseil's lock-order checks on (Debian's default): every lock, gRPC's included, "
    "then passes one process-wide spinlock (cuimg/common/lock_order_checks.h). For debugging.");
ABSL_FLAG(int, health_poll_ms, 250, "How often device health is re-evaluated, milliseconds.");
ABSL_FLAG(std::string, inject_device_failure, "",
          "Testing only: DEVICE:AFTER_REQUESTS[:DURATION_MS] makes that device fail the request "
          "after AFTER_REQUESTS requests and stay unhealthy DURATION_MS (0 = until restart).");
ABSL_FLAG(int, max_receive_message_bytes, 1 << 30, "Largest request message, bytes.");
ABSL_FLAG(int, http2_lookahead_bytes, 0,
          "HTTP/2 per-stream flow-control lookahead, bytes (0 = gRPC's default); see "
          "BENCHMARKS.md for the settings measured.");
ABSL_FLAG(int64_t, max_pixels, int64_t{1} << 30, "Largest image, width*height*depth.");
ABSL_FLAG(int, max_side, 65536, "Largest width, height or depth.");
ABSL_FLAG(int, max_element_extent, 1023, "Largest structuring element extent per axis.");
ABSL_FLAG(int, max_steps, 64, "Longest morphology chain.");
ABSL_FLAG(int, max_iterations, 1000, "Most iterations per morphology step.");
ABSL_FLAG(int, max_pyramid_levels, 64, "Most pyramid levels.");
ABSL_FLAG(int, max_batch_inputs, 4096, "Most entries of a batch (a request's `inputs`).");
ABSL_FLAG(uint64_t, max_batch_bytes, uint64_t{256} << 20, "Most decoded input bytes of a batch.");
ABSL_FLAG(int, batch_max_size, 7, "Most JPEG decodes a batch the server forms, [1, 64]; 1: none.");
ABSL_FLAG(int, detect_batch_max_size, 7, "Most frames sharing HOG launches, [1, 64]; 1: none.");
ABSL_FLAG(int, batch_lanes, 2, "JPEG decode batches that may run at once per GPU, [1, 8].");
ABSL_FLAG(int, detect_batch_lanes, 2, "HOG batches that may run at once per GPU, [1, 8].");
ABSL_FLAG(int, batch_max_delay_us, 200,
          "Longest wait of such a batch for items on their way (0: none; a lone call: none).");
ABSL_FLAG(int64_t, max_mesh_vertices, int64_t{1} << 24, "Most vertices per mesh.");
ABSL_FLAG(int64_t, max_decoded_pixels, int64_t{1} << 26,
          "Largest PNG/JPEG input, width*height, checked on the header before decoding.");
ABSL_FLAG(uint64_t, resident_budget_bytes, uint64_t{4} << 30,
          "Resident-object bytes per client identity.");
ABSL_FLAG(uint32_t, resident_ttl_seconds, 600, "Default resident-object TTL.");
ABSL_FLAG(uint32_t, resident_max_ttl_seconds, 86400, "Largest resident-object TTL.");
ABSL_FLAG(uint32_t, resident_max_objects, 4096,
          "Resident objects per client identity (least recently used evicted beyond).");
ABSL_FLAG(uint64_t, resident_max_total_bytes, uint64_t{16} << 30,
          "Resident-object bytes of all client identities together (0: no cap); an object that "
          "does not fit evicts only its own identity's least recently used objects, else is "
          "refused with RESOURCE_EXHAUSTED.");
ABSL_FLAG(int, upload_idle_timeout_ms, 20000,
          "An Upload stream that receives nothing for this long is ended (DEADLINE_EXCEEDED) and "
          "the bytes it held are freed.");
ABSL_FLAG(int, max_uploads_per_identity, 8,
          "Upload streams one client identity may have open at once; more get "
          "RESOURCE_EXHAUSTED.");
ABSL_FLAG(uint64_t, max_upload_bytes_per_identity, 0,
          "Declared bytes of one client identity's open uploads together; more get "
          "RESOURCE_EXHAUSTED. 0: half the server's in-flight bytes "
          "(--max_inflight_bytes_per_device x devices), so that uploads never hold it all. One "
          "upload is also at most half of --max_inflight_bytes_per_device.");
ABSL_FLAG(std::string, tls_cert_file, "", "PEM certificate chain: TLS on the gRPC port.");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key of --tls_cert_file.");
ABSL_FLAG(std::string, tls_client_ca_file, "",
          "PEM CA bundle client certificates are verified against (mTLS).");
ABSL_FLAG(bool, require_client_cert, false,
          "Refuse clients without a valid certificate (needs --tls_client_ca_file).");
ABSL_FLAG(std::string, auth_tokens_file, "",
          "Bearer tokens, lines of IDENTITY TOKEN [process,resident] (needs TLS); every Imaging "
          "call then needs \"authorization: Bearer TOKEN\".");
ABSL_FLAG(bool, auth_health_and_reflection, false,
          "With --auth_tokens_file: health and reflection need a token too (default: open).");
ABSL_FLAG(std::string, health_listen_address, "",
          "Plaintext address serving only grpc.health.v1 (and reflection), for probes that cannot "
          "do TLS; empty disables it.");
ABSL_FLAG(int, shutdown_grace_seconds, 30,
          "On SIGTERM/SIGINT/SIGHUP, seconds in-flight requests get to finish; then their work "
          "stops at its next check, and a process still running 5 s later exits with status 3.");
ABSL_FLAG(
    double, max_request_work, 2e11,
    "Estimated work one request may take, in operations per pixel of the backend's "
    "algorithm (1 to 4 ns each on a CPU core; server/scheduling/work_estimate.h); more is refused "
    "with RESOURCE_EXHAUSTED. 0: no cap.");
ABSL_FLAG(uint64_t, max_grouped_hits, 10000,
          "Most DetectPedestrians hits handed to grouping (which compares every pair); more is "
          "INVALID_ARGUMENT naming hit_threshold. 0: no cap.");
ABSL_FLAG(std::string, models_dir, "",
          "Directory of detector models (*.hogsvm) for DetectPedestrians, loaded at start-up; a "
          "file that does not parse stops the server. Empty: the first of "
          "<binary>/../share/cuimg/models, <binary>/../models and the source tree's models/ "
          "that exists.");
ABSL_FLAG(std::string, log_level, "info", "debug, info, warning or error.");
ABSL_FLAG(std::string, port_file, "",
          "If set, write {\"grpc\": PORT, \"metrics\": PORT} here once serving.");

namespace {
constexpr char kUsage[] =
    "cuimg-server: GPU image processing over gRPC.\n"
    "usage: cuimg-server [--flag=value ...] [--flagfile=FILE]\n"
    "signals: SIGTERM, SIGINT and SIGHUP drain in-flight requests (--shutdown_grace_seconds), "
    "then exit 0 (3 when work still runs 5 s past the grace period)\n";

// --help, --helpfull, --version: print to stdout and exit 0 (the exit code), else -1.
int HandleUsage(int argc, char** argv) {
  switch (cuimg::FindUsageRequest(argc, argv)) {
    case cuimg::UsageRequest::kNone:
      return -1;
    case cuimg::UsageRequest::kHelp:
      std::printf(
          "%s\nflags:\n%s\n--helpfull adds Abseil's own flags (--flagfile, ...); "
          "--version the build.\n",
          kUsage, cuimg::DescribeFlagsDefinedIn(__FILE__).c_str());
      return 0;
    case cuimg::UsageRequest::kHelpFull:
      std::printf("%s%s", kUsage, cuimg::DescribeAllFlags().c_str());
      return 0;
    case cuimg::UsageRequest::kVersion:
      std::printf("%s", cuimg::VersionText("cuimg-server").c_str());
      return 0;
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (const int code = HandleUsage(argc, argv); code >= 0) return code;
  absl::SetProgramUsageMessage(kUsage);
  absl::ParseCommandLine(argc, argv);
  // Before any thread starts (parsing the flags starts none).
  if (absl::GetFlag(FLAGS_malloc_huge_pages)) cuimg::ExecWithHugePageMalloc(argv);

  cuimg::ServerOptions options;
  options.listen_address = absl::GetFlag(FLAGS_listen_address);
  options.metrics_address = absl::GetFlag(FLAGS_metrics_address);
  options.build_commit = cuimg::BuildCommit();
  options.worker_threads = absl::GetFlag(FLAGS_worker_threads);
  options.worker_spin_us = absl::GetFlag(FLAGS_worker_spin_us);
  options.warm_cpus = absl::GetFlag(FLAGS_warm_cpus);
  options.decode_threads = absl::GetFlag(FLAGS_decode_threads);
  if (options.decode_threads < 0) {
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    options.decode_threads = std::clamp(cores - 1, 0, 15);
  }
  options.frame_decoder_path = absl::GetFlag(FLAGS_frame_decoder);
  options.max_inflight_requests = absl::GetFlag(FLAGS_max_inflight_requests);
  options.stream_frames_in_flight = absl::GetFlag(FLAGS_stream_frames_in_flight);
  options.cpu_threads_per_request = absl::GetFlag(FLAGS_cpu_threads_per_request);
  options.cpu_devices = absl::GetFlag(FLAGS_cpu_devices);
  options.max_inflight_bytes_per_device = absl::GetFlag(FLAGS_max_inflight_bytes_per_device);
  options.device_cache_bytes = absl::GetFlag(FLAGS_device_cache_bytes);
  options.device_memory_limit_bytes = absl::GetFlag(FLAGS_device_memory_limit_bytes);
  options.pinned_staging_bytes = absl::GetFlag(FLAGS_pinned_staging_bytes);
  options.pinned_staging_chunk_bytes = absl::GetFlag(FLAGS_pinned_staging_chunk_bytes);
  options.pinned_message_bytes = absl::GetFlag(FLAGS_pinned_message_bytes);
  options.pinned_message_min_bytes = absl::GetFlag(FLAGS_pinned_message_min_bytes);
  options.pinned_message_max_bytes = absl::GetFlag(FLAGS_pinned_message_max_bytes);
  if (options.pinned_staging_chunk_bytes == 0 || options.pinned_message_min_bytes == 0) {
    std::fprintf(stderr,
                 "--pinned_staging_chunk_bytes and --pinned_message_min_bytes must be > 0\n");
    return 2;
  }
  if (options.pinned_message_max_bytes < options.pinned_message_min_bytes ||
      options.pinned_message_max_bytes > (std::uint64_t{1} << 40)) {
    std::fprintf(stderr,
                 "--pinned_message_max_bytes must be in [--pinned_message_min_bytes, 2^40]\n");
    return 2;
  }
  options.shared_memory.enabled = absl::GetFlag(FLAGS_shared_memory);
  options.shared_memory.max_bytes_per_identity =
      absl::GetFlag(FLAGS_shared_memory_max_bytes_per_identity);
  options.shared_memory.max_regions_per_identity = absl::GetFlag(FLAGS_shared_memory_max_regions);
  options.health_poll_ms = absl::GetFlag(FLAGS_health_poll_ms);
  options.max_receive_message_bytes = absl::GetFlag(FLAGS_max_receive_message_bytes);
  options.http2_lookahead_bytes = absl::GetFlag(FLAGS_http2_lookahead_bytes);
  options.shutdown_grace_seconds = absl::GetFlag(FLAGS_shutdown_grace_seconds);
  options.max_request_work = absl::GetFlag(FLAGS_max_request_work);
  options.max_grouped_hits = absl::GetFlag(FLAGS_max_grouped_hits);
  options.batch_max_size = absl::GetFlag(FLAGS_batch_max_size);
  options.batch_max_delay_us = absl::GetFlag(FLAGS_batch_max_delay_us);
  options.detect_batch_max_size = absl::GetFlag(FLAGS_detect_batch_max_size);
  options.batch_lanes = absl::GetFlag(FLAGS_batch_lanes);
  options.detect_batch_lanes = absl::GetFlag(FLAGS_detect_batch_lanes);
  if (!(options.max_request_work >= 0)) {
    std::fprintf(stderr, "usage: --max_request_work must be >= 0 (0: no cap)\n");
    return 2;
  }
  options.resident_budget_bytes = absl::GetFlag(FLAGS_resident_budget_bytes);
  options.resident_ttl_seconds = absl::GetFlag(FLAGS_resident_ttl_seconds);
  options.resident_max_ttl_seconds = absl::GetFlag(FLAGS_resident_max_ttl_seconds);
  options.models_dir = cuimg::ModelsDir(absl::GetFlag(FLAGS_models_dir));
  if (options.models_dir.empty()) {
    std::fprintf(stderr,
                 "no models directory found next to the binary or in the source tree; "
                 "pass --models_dir\n");
    return 2;
  }
  options.resident_max_objects = absl::GetFlag(FLAGS_resident_max_objects);
  options.resident_max_total_bytes = absl::GetFlag(FLAGS_resident_max_total_bytes);
  options.upload_idle_timeout_ms = absl::GetFlag(FLAGS_upload_idle_timeout_ms);
  options.max_uploads_per_identity = absl::GetFlag(FLAGS_max_uploads_per_identity);
  options.max_upload_bytes_per_identity = absl::GetFlag(FLAGS_max_upload_bytes_per_identity);
  options.limits.max_pixels = absl::GetFlag(FLAGS_max_pixels);
  options.limits.max_side = absl::GetFlag(FLAGS_max_side);
  options.limits.max_element_extent = absl::GetFlag(FLAGS_max_element_extent);
  options.limits.max_steps = absl::GetFlag(FLAGS_max_steps);
  options.limits.max_iterations = absl::GetFlag(FLAGS_max_iterations);
  options.limits.max_pyramid_levels = absl::GetFlag(FLAGS_max_pyramid_levels);
  options.limits.max_mesh_vertices = absl::GetFlag(FLAGS_max_mesh_vertices);
  options.limits.max_decoded_pixels = absl::GetFlag(FLAGS_max_decoded_pixels);
  options.limits.max_batch_inputs = absl::GetFlag(FLAGS_max_batch_inputs);
  options.limits.max_batch_bytes = absl::GetFlag(FLAGS_max_batch_bytes);
  options.security.tls_cert_file = absl::GetFlag(FLAGS_tls_cert_file);
  options.security.tls_key_file = absl::GetFlag(FLAGS_tls_key_file);
  options.security.tls_client_ca_file = absl::GetFlag(FLAGS_tls_client_ca_file);
  options.security.require_client_cert = absl::GetFlag(FLAGS_require_client_cert);
  options.security.auth_tokens_file = absl::GetFlag(FLAGS_auth_tokens_file);
  options.security.auth_health_and_reflection = absl::GetFlag(FLAGS_auth_health_and_reflection);
  options.security.health_listen_address = absl::GetFlag(FLAGS_health_listen_address);

  cuimg::LogLevel level = cuimg::LogLevel::kInfo;
  if (!cuimg::ParseBackend(absl::GetFlag(FLAGS_backend), &options.backend) ||
      !cuimg::ParseCudaSync(absl::GetFlag(FLAGS_cuda_sync), &options.cuda_sync) ||
      !cuimg::ParseJpegDecoder(absl::GetFlag(FLAGS_jpeg_decoder), &options.jpeg_decoder) ||
      !cuimg::ParseLogLevel(absl::GetFlag(FLAGS_log_level), &level) ||
      !cuimg::ParseFault(absl::GetFlag(FLAGS_inject_device_failure), &options.fault)) {
    std::fprintf(stderr,
                 "usage: --backend auto|cuda|cpu, --cuda_sync auto|spin|yield|block, "
                 "--jpeg_decoder auto|gpu|cpu, "
                 "--log_level debug|info|warning|error, "
                 "--inject_device_failure DEVICE:AFTER[:DURATION_MS]\n");
    return 2;
  }
  if (options.worker_spin_us < 0 || options.worker_spin_us > 1000000) {
    std::fprintf(stderr, "usage: --worker_spin_us must be in 0..1000000\n");
    return 2;
  }
  if (absl::GetFlag(FLAGS_require_gpu) && options.backend == cuimg::BackendKind::kCpu) {
    std::fprintf(stderr, "usage: --require_gpu contradicts --backend=cpu\n");
    return 2;
  }
  if (options.warm_cpus < -1 || (options.warm_cpus != 0 && options.worker_spin_us == 0)) {
    std::fprintf(stderr,
                 "usage: --warm_cpus must be -1 (all), 0 (off) or a CPU count, and "
                 "needs --worker_spin_us > 0 (CPUs stay warm while a worker polls)\n");
    return 2;
  }
  // 0 resolves for the CUDA backend here (it makes a stream per worker) and again for the CPU
  // backend once --backend=auto has chosen.
  const bool auto_workers = options.worker_threads == 0;
  if (auto_workers) {
    options.worker_threads = cuimg::AutoWorkers(options.backend == cuimg::BackendKind::kCpu);
  }
  if (options.worker_threads < 1 || options.max_inflight_requests < 1 ||
      options.max_receive_message_bytes < 1 || options.http2_lookahead_bytes < 0 ||
      options.limits.max_element_extent < 1 || options.cpu_devices < 1 ||
      options.health_poll_ms < 1 || options.max_inflight_bytes_per_device < 1 ||
      options.limits.max_decoded_pixels < 1 || options.resident_max_objects < 1 ||
      options.limits.max_batch_inputs < 1) {
    std::fprintf(stderr,
                 "usage: thread, device, in-flight, message, extent, decoded-pixel, "
                 "resident-object, batch-input and poll limits must be >= 1\n");
    return 2;
  }
  if (const std::string wrong = cuimg::BatchingUsageError(options); !wrong.empty()) {
    std::fprintf(stderr, "usage: %s\n", wrong.c_str());
    return 2;
  }
  if (options.upload_idle_timeout_ms < 1 || options.max_uploads_per_identity < 1) {
    std::fprintf(stderr,
                 "usage: --upload_idle_timeout_ms and --max_uploads_per_identity must "
                 "be >= 1\n");
    return 2;
  }
  cuimg::SetLogLevel(level);

  // Termination signals are blocked in every thread (all start after this) and taken by sigwait
  // below, so shutdown runs on this thread, not in a signal handler.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  // A closed terminal or a supervisor's stop: drained like SIGTERM, not the default instant exit.
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const int arenas = absl::GetFlag(FLAGS_malloc_arena_max);
  const int trim_ms = absl::GetFlag(FLAGS_malloc_trim_interval_ms);
  if (arenas < 0 || trim_ms < 0) {
    std::fprintf(stderr, "usage: --malloc_arena_max and --malloc_trim_interval_ms must be >= 0\n");
    return 2;
  }
  // Before the backend and gRPC start their threads.
  cuimg::SetLockOrderChecks(absl::GetFlag(FLAGS_lock_order_checks));
  cuimg::RouteGrpcLogsThroughLog();
  if (!cuimg::LimitMallocArenas(arenas)) {
    cuimg::Log(cuimg::LogLevel::kWarning, "event=malloc_arena_max_ignored arenas=", arenas);
  }
  const cuimg::MallocTrimmer trimmer{std::chrono::milliseconds(trim_ms)};
  absl::StatusOr<std::unique_ptr<cuimg::Backend>> backend = cuimg::CreateBackend(options);
  if (!backend.ok()) {
    cuimg::LogEvent(cuimg::LogLevel::kError, "startup_failed",
                    {{"message", backend.status().ToString()}});
    return 1;
  }
  if (options.jpeg_decoder == cuimg::JpegDecoderChoice::kGpu &&
      (*backend)->jpeg_decoder() == nullptr) {
    // The CUDA backend already refused to start without nvJPEG; this is the CPU backend.
    cuimg::Log(cuimg::LogLevel::kError,
               "event=startup_failed message=\"--jpeg_decoder=gpu needs "
               "the CUDA backend (",
               (*backend)->name(), " backend here)\"");
    return 1;
  }
  if (auto_workers) options.worker_threads = cuimg::AutoWorkers((*backend)->name() == "cpu");
  if ((*backend)->name() == "cpu" && options.backend == cuimg::BackendKind::kAuto) {
    if (absl::GetFlag(FLAGS_require_gpu)) {
      cuimg::Log(cuimg::LogLevel::kError,
                 "event=startup_failed message=\"--require_gpu: no usable "
                 "CUDA GPU (driver or device missing); refusing to serve on the CPU backend\"");
      return 1;
    }
    // Health still says SERVING (the server works, slowly); the metric lets an alert say why.
    cuimg::Log(cuimg::LogLevel::kWarning,
               "event=cpu_fallback message=\"--backend=auto found no "
               "usable CUDA GPU; serving on the CPU backend (cuimg_backend_info{backend=cpu}); "
               "--require_gpu refuses instead\"");
  }
  const std::string description = (*backend)->Describe();
  absl::StatusOr<std::unique_ptr<cuimg::CuimgServer>> server =
      cuimg::CuimgServer::Start(options, *std::move(backend));
  if (!server.ok()) {
    cuimg::LogEvent(cuimg::LogLevel::kError, "startup_failed",
                    {{"message", server.status().ToString()}});
    return 1;
  }
  cuimg::Log(cuimg::LogLevel::kInfo, "event=startup version=", cuimg::kVersion, " ", description,
             " grpc_port=", (*server)->grpc_port(), " metrics_port=", (*server)->metrics_port(),
             " workers=", options.worker_threads, " worker_spin_us=", options.worker_spin_us,
             " warm_cpus=", (*server)->warm_cpus(), " cuda_sync=", absl::GetFlag(FLAGS_cuda_sync),
             " decode_threads=", options.decode_threads, " malloc_arena_max=", arenas,
             " malloc_trim_interval_ms=", trim_ms, " batch_max_size=", options.batch_max_size,
             " malloc_huge_pages=", cuimg::MallocHugePagesRequested() ? "on" : "off",
             " lock_order_checks=", absl::GetFlag(FLAGS_lock_order_checks) ? "on" : "off",
             " max_inflight_requests=", options.max_inflight_requests,
             " max_receive_message_bytes=", options.max_receive_message_bytes,
             " max_pixels=", options.limits.max_pixels,
             " max_element_extent=", options.limits.max_element_extent,
             " max_decoded_pixels=", options.limits.max_decoded_pixels,
             " max_batch_inputs=", options.limits.max_batch_inputs,
             " max_batch_bytes=", options.limits.max_batch_bytes,
             " batch_max_delay_us=", options.batch_max_delay_us,
             " batch_lanes=", options.batch_lanes,
             " detect_batch_max_size=", options.detect_batch_max_size,
             " detect_batch_lanes=", options.detect_batch_lanes,
             " max_inflight_bytes_per_device=", options.max_inflight_bytes_per_device,
             " max_request_work=", options.max_request_work,
             " max_grouped_hits=", options.max_grouped_hits, " ", (*server)->security_description(),
             " health_port=", (*server)->health_port(), " models_dir=", options.models_dir,
             " models=\"", (*server)->models().Names(), "\"");
  const std::string port_file = absl::GetFlag(FLAGS_port_file);
  if (!port_file.empty()) {
    std::ofstream(port_file) << "{\"grpc\": " << (*server)->grpc_port()
                             << ", \"metrics\": " << (*server)->metrics_port()
                             << ", \"health\": " << (*server)->health_port() << "}\n";
  }

  int signal = 0;
  sigwait(&signals, &signal);
  cuimg::Log(cuimg::LogLevel::kInfo, "event=shutdown signal=", signal,
             " grace_seconds=", options.shutdown_grace_seconds);
  // After the grace period running work stops at its next check (milliseconds); what no check
  // reaches (one long kernel, a stuck transport) must not keep the process alive: an orchestrator
  // waits for the exit. Past this bound the process ends without unwinding.
  constexpr std::chrono::seconds kExitBound{5};
  std::thread([grace = std::chrono::seconds(options.shutdown_grace_seconds), kExitBound] {
    std::this_thread::sleep_for(grace + kExitBound);
    cuimg::Log(cuimg::LogLevel::kError,
               "event=shutdown_timeout exit_bound_seconds=", kExitBound.count(),
               " message=\"still running after the grace period and the "
               "bound; exiting\"");
    std::_Exit(3);
  }).detach();
  (*server)->Shutdown(absl::Seconds(options.shutdown_grace_seconds));
  cuimg::Log(cuimg::LogLevel::kInfo, "event=stopped");
  return 0;
}
