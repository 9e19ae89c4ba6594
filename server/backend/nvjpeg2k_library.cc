#include "server/backend/nvjpeg2k_library.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"
#include "cuimg/common/status_macros.h"
#include "server/backend/shared_library.h"

namespace cuimg {

Nvjpeg2kLibrary::~Nvjpeg2kLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

#ifndef CUIMG_HAVE_NVJPEG2K

absl::StatusOr<std::shared_ptr<const Nvjpeg2kLibrary>> Nvjpeg2kLibrary::Load() {
  return absl::UnavailableError("built without nvjpeg2k.h (scripts/install_deps.sh installs it)");
}

#else

absl::StatusOr<std::shared_ptr<const Nvjpeg2kLibrary>> Nvjpeg2kLibrary::Load() {
  std::shared_ptr<Nvjpeg2kLibrary> lib(new Nvjpeg2kLibrary());
#ifdef CUIMG_NVJPEG2K_LIBRARY
  constexpr const char* kFallback = CUIMG_NVJPEG2K_LIBRARY;
#else
  constexpr const char* kFallback = nullptr;
#endif
  CUIMG_ASSIGN_OR_RETURN(lib->handle_,
                         OpenSharedLibrary("libnvjpeg2k.so.0", kFallback, "nvJPEG2000"));
  void* h = lib->handle_;
  Nvjpeg2kLibrary& l = *lib;
  const bool ok =
      ResolveSymbol(h, "nvjpeg2kGetProperty", &l.GetProperty) &&
      ResolveSymbol(h, "nvjpeg2kCreateSimple", &l.CreateSimple) &&
      ResolveSymbol(h, "nvjpeg2kDestroy", &l.Destroy) &&
      ResolveSymbol(h, "nvjpeg2kDecodeStateCreate", &l.DecodeStateCreate) &&
      ResolveSymbol(h, "nvjpeg2kDecodeStateDestroy", &l.DecodeStateDestroy) &&
      ResolveSymbol(h, "nvjpeg2kStreamCreate", &l.StreamCreate) &&
      ResolveSymbol(h, "nvjpeg2kStreamDestroy", &l.StreamDestroy) &&
      ResolveSymbol(h, "nvjpeg2kStreamParse", &l.StreamParse) &&
      ResolveSymbol(h, "nvjpeg2kStreamGetImageInfo", &l.StreamGetImageInfo) &&
      ResolveSymbol(h, "nvjpeg2kStreamGetImageComponentInfo", &l.StreamGetImageComponentInfo) &&
      ResolveSymbol(h, "nvjpeg2kDecodeImage", &l.DecodeImage) &&
      ResolveSymbol(h, "nvjpeg2kEncoderCreateSimple", &l.EncoderCreateSimple) &&
      ResolveSymbol(h, "nvjpeg2kEncoderDestroy", &l.EncoderDestroy) &&
      ResolveSymbol(h, "nvjpeg2kEncodeStateCreate", &l.EncodeStateCreate) &&
      ResolveSymbol(h, "nvjpeg2kEncodeStateDestroy", &l.EncodeStateDestroy) &&
      ResolveSymbol(h, "nvjpeg2kEncodeParamsCreate", &l.EncodeParamsCreate) &&
      ResolveSymbol(h, "nvjpeg2kEncodeParamsDestroy", &l.EncodeParamsDestroy) &&
      ResolveSymbol(h, "nvjpeg2kEncodeParamsSetEncodeConfig", &l.EncodeParamsSetEncodeConfig) &&
      ResolveSymbol(h, "nvjpeg2kEncode", &l.Encode) &&
      ResolveSymbol(h, "nvjpeg2kEncodeRetrieveBitstream", &l.EncodeRetrieveBitstream);
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
