// The text of cuimg-server's flags (main.cc) as the option values they name. Each Parse* sets
// *out and returns true for a name it knows; for any other text it returns false and leaves *out
// as it was (main prints the usage and exits 2).
#ifndef CUIMG_SERVER_FLAG_VALUES_H_
#define CUIMG_SERVER_FLAG_VALUES_H_

#include <string>

#include "server/observability/log.h"
#include "server/server_options.h"

namespace cuimg {

// --backend: auto, cuda or cpu.
bool ParseBackend(const std::string& s, BackendKind* out);

// --cuda_sync: auto, spin, yield or block.
bool ParseCudaSync(const std::string& s, CudaSync* out);

// --jpeg_decoder: auto, gpu or cpu.
bool ParseJpegDecoder(const std::string& s, JpegDecoderChoice* out);

// --log_level: debug, info, warning or error.
bool ParseLogLevel(const std::string& s, LogLevel* out);

// --inject_device_failure: DEVICE:AFTER_REQUESTS[:DURATION_MS], non-negative integers; the empty
// text is no fault (true, *out untouched).
bool ParseFault(const std::string& s, FaultInjection* out);

// --worker_threads=0's value for a backend: on the CUDA backend one per core, at most 16 (the
// requests' kernels and decodes overlap); on the CPU backend 4 (each request uses every core).
int AutoWorkers(bool cpu_backend);

// What is wrong with the batching and DetectStream flags' values (--stream_frames_in_flight and
// --[detect_]batch_max_size in [1, 64], --[detect_]batch_lanes in [1, 8], --batch_max_delay_us
// >= 0), for the usage line; "" when nothing is.
std::string BatchingUsageError(const ServerOptions& options);

// `flag` (--models_dir) when set; else the first directory that exists of
// <binary>/../share/cuimg/models (installed), <binary>/../models (the bundle) and the source
// tree's models/ (a build tree's server), made canonical; "" when none does.
std::string ModelsDir(const std::string& flag);

}  // namespace cuimg

#endif  // CUIMG_SERVER_FLAG_VALUES_H_
