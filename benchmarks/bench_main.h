// The common frame of the kernel benchmarks' main(): flags, the device line, the copy bandwidth
// that floors are computed from, and the loop over the selected workloads.
#ifndef CUIMG_BENCHMARKS_BENCH_MAIN_H_
#define CUIMG_BENCHMARKS_BENCH_MAIN_H_

#include <cstdio>
#include <cstring>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "bench_util.h"
#include "cuimg/common/cuda_stream.h"
#include "cuimg/common/device_info.h"

namespace cuimg::bench {

struct BenchArgs {
  bool quick = false;  // --quick: 5 timed runs instead of 25
  std::string filter;  // --filter SUBSTRING: only workloads whose name contains it
  bool cpu = true;     // --no-cpu (where `allow_no_cpu`): skip the CPU comparison runs
  // --dump DIR (benchmarks that support it): each workload's input and cuimg's result as .npy,
  // so an anchor in Python (benchmarks/anchors/) runs on the same data and checks the result.
  std::string dump_dir;
  int runs() const { return quick ? 5 : 25; }
};

// Parses the flags above; prints the usage line and returns false on anything else.
inline bool ParseBenchArgs(int argc, char** argv, const char* program, bool allow_no_cpu,
                           BenchArgs* args) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      args->quick = true;
    } else if (allow_no_cpu && std::strcmp(argv[i], "--no-cpu") == 0) {
      args->cpu = false;
    } else if (std::strcmp(argv[i], "--filter") == 0 && i + 1 < argc) {
      args->filter = argv[++i];
    } else if (std::strcmp(argv[i], "--dump") == 0 && i + 1 < argc) {
      args->dump_dir = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--quick] [--filter SUBSTRING] [--dump DIR]%s\n", program,
                   allow_no_cpu ? " [--no-cpu]" : "");
      return false;
    }
  }
  return true;
}

// The benchmark's stream on device 0 and the measured copy bandwidth (bytes/s), after printing
// the device line; the error is printed when there is no usable device.
struct BenchDevice {
  CudaStream stream;
  double bandwidth = 0;
};
inline absl::StatusOr<BenchDevice> StartBench() {
  const auto devices = ListCudaDevices();
  if (devices.empty()) return absl::UnavailableError("no usable CUDA device");
  BenchDevice d;
  CUIMG_ASSIGN_OR_RETURN(d.stream, CudaStream::Create());
  CUIMG_ASSIGN_OR_RETURN(d.bandwidth, MeasureCopyBandwidth(d.stream.get()));
  // The launch floor: an empty kernel timed as every workload is.
  CUIMG_ASSIGN_OR_RETURN(Timing empty, TimeOnStream(d.stream.get(), 3, 25, [&](int) {
                           return LaunchEmptyKernel(d.stream.get());
                         }));
  PrintJson(
      absl::StrFormat("\"impl\":\"device\",\"name\":\"%s\",\"sms\":%d,"
                      "\"copy_bandwidth_gbps\":%.1f,\"empty_kernel_us\":%.2f,"
                      "\"runtime\":\"%s\"",
                      devices[0].name, devices[0].multiprocessors, d.bandwidth / 1e9,
                      empty.median_us, CudaVersionString()));
  return d;
}

// Runs run(w) for each workload whose name contains `filter`, printing failures; the exit code.
template <typename Workloads, typename Run>
int RunWorkloads(const Workloads& workloads, const std::string& filter, const Run& run) {
  int failures = 0;
  for (const auto& w : workloads) {
    if (!filter.empty() && !absl::StrContains(w.name, filter)) continue;
    const absl::Status s = run(w);
    if (!s.ok()) {
      std::fprintf(stderr, "%s: %s\n", std::string(w.name).c_str(), s.ToString().c_str());
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace cuimg::bench

#endif  // CUIMG_BENCHMARKS_BENCH_MAIN_H_
