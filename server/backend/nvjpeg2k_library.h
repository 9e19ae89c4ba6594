// nvJPEG2000 loaded at run time (dlopen), like nvJPEG (nvjpeg_library.h): the library comes from
// NVIDIA's wheel, not the CUDA toolkit, so a server without it still starts and decodes JPEG 2000
// and HTJ2K frames on the CPU. Built against nvjpeg2k.h where CMake found it
// (CUIMG_HAVE_NVJPEG2K); without the header, Load() always says so.
#ifndef CUIMG_SERVER_NVJPEG2K_LIBRARY_H_
#define CUIMG_SERVER_NVJPEG2K_LIBRARY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

#ifdef CUIMG_HAVE_NVJPEG2K
#include <nvjpeg2k.h>
#endif

namespace cuimg {

// The entry points the frame decoder and encoder use, resolved once; the library stays loaded
// while any copy of the shared_ptr lives.
class Nvjpeg2kLibrary {
 public:
  // Loads libnvjpeg2k.so.0: from the loader's search path (the executable's RUNPATH, which the
  // bundle and the Docker image point at their copy, then LD_LIBRARY_PATH and the system), else
  // from the copy the build found (CUIMG_NVJPEG2K_LIBRARY). UNAVAILABLE naming why: built without
  // nvjpeg2k.h, no library, or a missing symbol.
  static absl::StatusOr<std::shared_ptr<const Nvjpeg2kLibrary>> Load();

  ~Nvjpeg2kLibrary();
  Nvjpeg2kLibrary(const Nvjpeg2kLibrary&) = delete;
  Nvjpeg2kLibrary& operator=(const Nvjpeg2kLibrary&) = delete;

  // "0.11.0", and the file it came from ("?" when unknown), for the start-up line.
  const std::string& version() const { return version_; }
  const std::string& path() const { return path_; }

#ifdef CUIMG_HAVE_NVJPEG2K
  decltype(&::nvjpeg2kGetProperty) GetProperty = nullptr;
  decltype(&::nvjpeg2kCreateSimple) CreateSimple = nullptr;
  decltype(&::nvjpeg2kDestroy) Destroy = nullptr;
  decltype(&::nvjpeg2kDecodeStateCreate) DecodeStateCreate = nullptr;
  decltype(&::nvjpeg2kDecodeStateDestroy) DecodeStateDestroy = nullptr;
  decltype(&::nvjpeg2kStreamCreate) StreamCreate = nullptr;
  decltype(&::nvjpeg2kStreamDestroy) StreamDestroy = nullptr;
  decltype(&::nvjpeg2kStreamParse) StreamParse = nullptr;
  decltype(&::nvjpeg2kStreamGetImageInfo) StreamGetImageInfo = nullptr;
  decltype(&::nvjpeg2kStreamGetImageComponentInfo) StreamGetImageComponentInfo = nullptr;
  decltype(&::nvjpeg2kDecodeImage) DecodeImage = nullptr;
  decltype(&::nvjpeg2kEncoderCreateSimple) EncoderCreateSimple = nullptr;
  decltype(&::nvjpeg2kEncoderDestroy) EncoderDestroy = nullptr;
  decltype(&::nvjpeg2kEncodeStateCreate) EncodeStateCreate = nullptr;
  decltype(&::nvjpeg2kEncodeStateDestroy) EncodeStateDestroy = nullptr;
  decltype(&::nvjpeg2kEncodeParamsCreate) EncodeParamsCreate = nullptr;
  decltype(&::nvjpeg2kEncodeParamsDestroy) EncodeParamsDestroy = nullptr;
  decltype(&::nvjpeg2kEncodeParamsSetEncodeConfig) EncodeParamsSetEncodeConfig = nullptr;
  decltype(&::nvjpeg2kEncode) Encode = nullptr;
  decltype(&::nvjpeg2kEncodeRetrieveBitstream) EncodeRetrieveBitstream = nullptr;
#endif

 private:
  Nvjpeg2kLibrary() = default;
  void* handle_ = nullptr;  // dlopen's; closed by the destructor
  std::string version_;
  std::string path_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_NVJPEG2K_LIBRARY_H_
