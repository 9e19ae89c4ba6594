#include "cuimg/common/device_info.h"
#include "server/backend/backend.h"

namespace cuimg {

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(const ServerOptions& options) {
  switch (options.backend) {
    case BackendKind::kCpu:
      return CreateCpuBackend(options);
    case BackendKind::kCuda:
      return CreateCudaBackend(options);
    case BackendKind::kAuto:
      break;
  }
  if (!ListCudaDevices().empty()) return CreateCudaBackend(options);
  return CreateCpuBackend(options);
}

}  // namespace cuimg
