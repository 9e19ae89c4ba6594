#include "server/backend/nvjpeg2k_library.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace cuimg {

Nvjpeg2kLibrary::~Nvjpeg2kLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

#ifndef CUIMG_HAVE_NVJPEG2K

absl::StatusOr<std::shared_ptr<const Nvjpeg2kLibrary>> Nvjpeg2kLibrary::Load() {
  return absl::UnavailableError("built without nvjpeg2k.h (scripts/install_deps.sh installs it)");
}

#else

namespace {

template <typename Fn>
bool Resolve(void* handle, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  return *fn != nullptr;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const Nvjpeg2kLibrary>> Nvjpeg2kLibrary::Load() {
  std::shared_ptr<Nvjpeg2kLibrary> lib(new Nvjpeg2kLibrary());
  std::string tried = "libnvjpeg2k.so.0";
  lib->handle_ = dlopen("libnvjpeg2k.so.0", RTLD_NOW | RTLD_LOCAL);
#ifdef CUIMG_NVJPEG2K_LIBRARY
  if (lib->handle_ == nullptr) {
    lib->handle_ = dlopen(CUIMG_NVJPEG2K_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    absl::StrAppend(&tried, ", ", CUIMG_NVJPEG2K_LIBRARY);
  }
#endif
  if (lib->handle_ == nullptr) {
    const char* error = dlerror();
    return absl::UnavailableError(absl::StrCat("no nvJPEG2000 library (tried ", tried,
                                               "): ", error != nullptr ? error : "not found"));
  }
  void* h = lib->handle_;
  Nvjpeg2kLibrary& l = *lib;
  const bool ok =
      Resolve(h, "nvjpeg2kGetProperty", &l.GetProperty) &&
      Resolve(h, "nvjpeg2kCreateSimple", &l.CreateSimple) &&
      Resolve(h, "nvjpeg2kDestroy", &l.Destroy) &&
      Resolve(h, "nvjpeg2kDecodeStateCreate", &l.DecodeStateCreate) &&
      Resolve(h, "nvjpeg2kDecodeStateDestroy", &l.DecodeStateDestroy) &&
      Resolve(h, "nvjpeg2kStreamCreate", &l.StreamCreate) &&
      Resolve(h, "nvjpeg2kStreamDestroy", &l.StreamDestroy) &&
      Resolve(h, "nvjpeg2kStreamParse", &l.StreamParse) &&
      Resolve(h, "nvjpeg2kStreamGetImageInfo", &l.StreamGetImageInfo) &&
      Resolve(h, "nvjpeg2kStreamGetImageComponentInfo", &l.StreamGetImageComponentInfo) &&
      Resolve(h, "nvjpeg2kDecodeImage", &l.DecodeImage) &&
      Resolve(h, "nvjpeg2kEncoderCreateSimple", &l.EncoderCreateSimple) &&
      Resolve(h, "nvjpeg2kEncoderDestroy", &l.EncoderDestroy) &&
      Resolve(h, "nvjpeg2kEncodeStateCreate", &l.EncodeStateCreate) &&
      Resolve(h, "nvjpeg2kEncodeStateDestroy", &l.EncodeStateDestroy) &&
      Resolve(h, "nvjpeg2kEncodeParamsCreate", &l.EncodeParamsCreate) &&
      Resolve(h, "nvjpeg2kEncodeParamsDestroy", &l.EncodeParamsDestroy) &&
      Resolve(h, "nvjpeg2kEncodeParamsSetEncodeConfig", &l.EncodeParamsSetEncodeConfig) &&
      Resolve(h, "nvjpeg2kEncode", &l.Encode) &&
      Resolve(h, "nvjpeg2kEncodeRetrieveBitstream", &l.EncodeRetrieveBitstream);
  if (!ok) {
    const char* error = dlerror();
    return absl::UnavailableError(
        absl::StrCat("nvJPEG2000 library lacks a symbol: ", error != nullptr ? error : "?"));
  }
  int major = 0, minor = 0, patch = 0;
  l.GetProperty(MAJOR_VERSION, &major);
  l.GetProperty(MINOR_VERSION, &minor);
  l.GetProperty(PATCH_LEVEL, &patch);
  Dl_info info{};
  const bool found =
      dladdr(reinterpret_cast<void*>(l.CreateSimple), &info) != 0 && info.dli_fname != nullptr;
  l.version_ = absl::StrCat(major, ".", minor, ".", patch);
  l.path_ = found ? info.dli_fname : "?";
  return std::shared_ptr<const Nvjpeg2kLibrary>(std::move(lib));
}

#endif  // CUIMG_HAVE_NVJPEG2K

}  // namespace cuimg
