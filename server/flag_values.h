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

// `flag` (--models_dir) when set; else the first directory that exists of
// <binary>/../share/cuimg/models (installed), <binary>/../models (the bundle) and the source
// tree's models/ (a build tree's server), made canonical; "" when none does.
std::string ModelsDir(const std::string& flag);

}  // namespace cuimg

#endif  // CUIMG_SERVER_FLAG_VALUES_H_
