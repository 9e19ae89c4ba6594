#include "server/backend/nvjpeg_library.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"
#include "cuimg/common/status_macros.h"
#include "server/backend/shared_library.h"

namespace cuimg {

NvjpegLibrary::~NvjpegLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

#ifndef CUIMG_HAVE_NVJPEG

absl::StatusOr<std::shared_ptr<const NvjpegLibrary>> NvjpegLibrary::Load() {
  return absl::UnavailableError("built without nvjpeg.h (scripts/install_deps.sh installs it)");
}

#else

absl::StatusOr<std::shared_ptr<const NvjpegLibrary>> NvjpegLibrary::Load() {
  std::shared_ptr<NvjpegLibrary> lib(new NvjpegLibrary());
#ifdef CUIMG_NVJPEG_LIBRARY
  constexpr const char* kFallback = CUIMG_NVJPEG_LIBRARY;
#else
  constexpr const char* kFallback = nullptr;
#endif
  CUIMG_ASSIGN_OR_RETURN(lib->handle_, OpenSharedLibrary("libnvjpeg.so.13", kFallback, "nvJPEG"));
  void* h = lib->handle_;
  const bool ok =
      ResolveSymbol(h, "nvjpegGetProperty", &lib->GetProperty) &&
      ResolveSymbol(h, "nvjpegCreateEx", &lib->CreateEx) &&
      ResolveSymbol(h, "nvjpegDestroy", &lib->Destroy) &&
      ResolveSymbol(h, "nvjpegJpegStateCreate", &lib->JpegStateCreate) &&
      ResolveSymbol(h, "nvjpegJpegStateDestroy", &lib->JpegStateDestroy) &&
      ResolveSymbol(h, "nvjpegDecode", &lib->Decode) &&
      ResolveSymbol(h, "nvjpegDecodeBatchedInitialize", &lib->DecodeBatchedInitialize) &&
      ResolveSymbol(h, "nvjpegDecodeBatched", &lib->DecodeBatched) &&
      ResolveSymbol(h, "nvjpegDecodeBatchedSupported", &lib->DecodeBatchedSupported) &&
      ResolveSymbol(h, "nvjpegJpegStreamCreate", &lib->JpegStreamCreate) &&
      ResolveSymbol(h, "nvjpegJpegStreamDestroy", &lib->JpegStreamDestroy) &&
      ResolveSymbol(h, "nvjpegJpegStreamParseHeader", &lib->JpegStreamParseHeader) &&
      ResolveSymbol(h, "nvjpegJpegStreamGetFrameDimensions", &lib->JpegStreamGetFrameDimensions) &&
      ResolveSymbol(h, "nvjpegJpegStreamGetComponentsNum", &lib->JpegStreamGetComponentsNum);
  if (!ok) {
    const char* error = dlerror();
    return absl::UnavailableError(
        absl::StrCat("nvJPEG library lacks a symbol: ", error != nullptr ? error : "?"));
  }
  int major = 0, minor = 0, patch = 0;
  lib->GetProperty(MAJOR_VERSION, &major);
  lib->GetProperty(MINOR_VERSION, &minor);
  lib->GetProperty(PATCH_LEVEL, &patch);
  Dl_info info{};
  const bool found =
      dladdr(reinterpret_cast<void*>(lib->CreateEx), &info) != 0 && info.dli_fname != nullptr;
  lib->version_ = absl::StrCat(major, ".", minor, ".", patch);
  lib->path_ = found ? info.dli_fname : "?";
  return std::shared_ptr<const NvjpegLibrary>(std::move(lib));
}

#endif  // CUIMG_HAVE_NVJPEG

}  // namespace cuimg
