#include "cuimg/kernels/segmentation_types.h"

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"

namespace cuimg {

Connectivity ResolveConnectivity(Connectivity c, const Extent& extent) {
  if (c != Connectivity::kDefault) return c;
  return extent.depth > 1 ? Connectivity::k6 : Connectivity::k4;
}

absl::Status ValidateConnectivity(Connectivity c, const Extent& extent, const char* field) {
  const bool volume = extent.depth > 1;
  switch (c) {
    case Connectivity::kDefault:
      return absl::OkStatus();
    case Connectivity::k4:
    case Connectivity::k8:
      if (!volume) return absl::OkStatus();
      break;
    case Connectivity::k6:
    case Connectivity::k18:
    case Connectivity::k26:
      if (volume) return absl::OkStatus();
      break;
  }
  return InvalidFieldError(ErrorReason::kValueOutOfRange, field,
                           absl::StrCat("connectivity ", static_cast<int>(c), " does not suit a ",
                                        volume ? "volume (6, 18 or 26)" : "2D image (4 or 8)"));
}

}  // namespace cuimg
