#include "cuimg/common/cuda_status.h"

#include "absl/strings/str_cat.h"

namespace cuimg {

bool IsStickyCudaError(cudaError_t error) {
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorECCUncorrectable:
    case cudaErrorDevicesUnavailable:
    case cudaErrorDeviceUninitialized:
    case cudaErrorContextIsDestroyed:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

absl::Status CudaStatus(cudaError_t error, const char* what, const char* file, int line) {
  if (error == cudaSuccess) return absl::OkStatus();
  const std::string message = absl::StrCat(what, ": ", cudaGetErrorName(error), " (",
                                           cudaGetErrorString(error), ") at ", file, ":", line);
  const bool sticky = IsStickyCudaError(error);
  // Clear non-sticky errors so they do not surface in an unrelated later call.
  if (!sticky) (void)cudaGetLastError();
  switch (error) {
    case cudaErrorMemoryAllocation:
      return absl::ResourceExhaustedError(message);
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
      return absl::UnavailableError(message);
    default:
      break;
  }
  if (sticky) return absl::UnavailableError(absl::StrCat("device failed: ", message));
  return absl::InternalError(message);
}

}  // namespace cuimg
