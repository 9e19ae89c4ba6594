#include "server/backend/nvjpeg_library.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace cuimg {

NvjpegLibrary::~NvjpegLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

#ifndef CUIMG_HAVE_NVJPEG

absl::StatusOr<std::shared_ptr<const NvjpegLibrary>> NvjpegLibrary::Load() {
  return absl::UnavailableError("built without nvjpeg.h (scripts/install_deps.sh installs it)");
}

#else

namespace {

template <typename Fn>
bool Resolve(void* handle, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  return *fn != nullptr;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const NvjpegLibrary>> NvjpegLibrary::Load() {
  std::shared_ptr<NvjpegLibrary> lib(new NvjpegLibrary());
  std::string tried = "libnvjpeg.so.13";
  lib->handle_ = dlopen("libnvjpeg.so.13", RTLD_NOW | RTLD_LOCAL);
#ifdef CUIMG_NVJPEG_LIBRARY
  if (lib->handle_ == nullptr) {
    lib->handle_ = dlopen(CUIMG_NVJPEG_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    absl::StrAppend(&tried, ", ", CUIMG_NVJPEG_LIBRARY);
  }
#endif
  if (lib->handle_ == nullptr) {
    const char* error = dlerror();
    return absl::UnavailableError(absl::StrCat("no nvJPEG library (tried ", tried,
                                               "): ", error != nullptr ? error : "not found"));
  }
  void* h = lib->handle_;
  const bool ok =
      Resolve(h, "nvjpegGetProperty", &lib->GetProperty) &&
      Resolve(h, "nvjpegCreateEx", &lib->CreateEx) && Resolve(h, "nvjpegDestroy", &lib->Destroy) &&
      Resolve(h, "nvjpegJpegStateCreate", &lib->JpegStateCreate) &&
      Resolve(h, "nvjpegJpegStateDestroy", &lib->JpegStateDestroy) &&
      Resolve(h, "nvjpegDecode", &lib->Decode) &&
      Resolve(h, "nvjpegDecodeBatchedInitialize", &lib->DecodeBatchedInitialize) &&
      Resolve(h, "nvjpegDecodeBatched", &lib->DecodeBatched) &&
      Resolve(h, "nvjpegDecodeBatchedSupported", &lib->DecodeBatchedSupported) &&
      Resolve(h, "nvjpegJpegStreamCreate", &lib->JpegStreamCreate) &&
      Resolve(h, "nvjpegJpegStreamDestroy", &lib->JpegStreamDestroy) &&
      Resolve(h, "nvjpegJpegStreamParseHeader", &lib->JpegStreamParseHeader) &&
      Resolve(h, "nvjpegJpegStreamGetFrameDimensions", &lib->JpegStreamGetFrameDimensions) &&
      Resolve(h, "nvjpegJpegStreamGetComponentsNum", &lib->JpegStreamGetComponentsNum);
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
