#include "server/flag_values.h"

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace cuimg {
namespace {

// Sets *out to the value named `s` among `choices`; false (out untouched) for any other name.
template <typename T>
bool ParseChoice(const std::string& s, std::initializer_list<std::pair<const char*, T>> choices,
                 T* out) {
  for (const auto& [name, value] : choices) {
    if (s == name) {
      *out = value;
      return true;
    }
  }
  return false;
}

}  // namespace

bool ParseBackend(const std::string& s, BackendKind* out) {
  return ParseChoice(
      s, {{"auto", BackendKind::kAuto}, {"cuda", BackendKind::kCuda}, {"cpu", BackendKind::kCpu}},
      out);
}

bool ParseCudaSync(const std::string& s, CudaSync* out) {
  return ParseChoice(s,
                     {{"auto", CudaSync::kAuto},
                      {"spin", CudaSync::kSpin},
                      {"yield", CudaSync::kYield},
                      {"block", CudaSync::kBlock}},
                     out);
}

bool ParseJpegDecoder(const std::string& s, JpegDecoderChoice* out) {
  return ParseChoice(s,
                     {{"auto", JpegDecoderChoice::kAuto},
                      {"gpu", JpegDecoderChoice::kGpu},
                      {"cpu", JpegDecoderChoice::kCpu}},
                     out);
}

bool ParseFault(const std::string& s, FaultInjection* out) {
  if (s.empty()) return true;
  std::vector<std::string> parts = absl::StrSplit(s, ':');
  if (parts.size() < 2 || parts.size() > 3) return false;
  int values[3] = {0, 0, 0};
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (!absl::SimpleAtoi(parts[i], &values[i]) || values[i] < 0) return false;
  }
  *out = FaultInjection{values[0], values[1], values[2]};
  return true;
}

bool ParseLogLevel(const std::string& s, LogLevel* out) {
  return ParseChoice(s,
                     {{"debug", LogLevel::kDebug},
                      {"info", LogLevel::kInfo},
                      {"warning", LogLevel::kWarning},
                      {"error", LogLevel::kError}},
                     out);
}

int AutoWorkers(bool cpu_backend) {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return cpu_backend ? 4 : std::clamp(cores, 1, 16);
}

std::string BatchingUsageError(const ServerOptions& o) {
  const auto in = [](int v, int lo, int hi) { return v >= lo && v <= hi; };
  if (!in(o.stream_frames_in_flight, 1, 64) || !in(o.batch_max_size, 1, 64) ||
      !in(o.detect_batch_max_size, 1, 64)) {
    return "--stream_frames_in_flight and --[detect_]batch_max_size must be in [1, 64]";
  }
  if (!in(o.batch_lanes, 1, 8) || !in(o.detect_batch_lanes, 1, 8)) {
    return "--[detect_]batch_lanes must be in [1, 8]";
  }
  if (o.batch_max_delay_us < 0) return "--batch_max_delay_us must be >= 0";
  return "";
}

std::string ModelsDir(const std::string& flag) {
  if (!flag.empty()) return flag;
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  std::vector<std::filesystem::path> candidates;
  if (!error) {
    candidates.push_back(exe.parent_path() / ".." / "share" / "cuimg" / "models");
    candidates.push_back(exe.parent_path() / ".." / "models");
  }
  candidates.push_back(CUIMG_SOURCE_MODELS_DIR);
  for (const std::filesystem::path& dir : candidates) {
    if (std::filesystem::is_directory(dir, error)) {
      return std::filesystem::weakly_canonical(dir, error).string();
    }
  }
  return "";
}

}  // namespace cuimg
