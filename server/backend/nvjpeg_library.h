// nvJPEG loaded at run time (dlopen): the library is not part of the CUDA toolkit we build with,
// so a server without it must still start and decode JPEGs on the CPU. Built against nvjpeg.h
// where CMake found it (CUIMG_HAVE_NVJPEG); without the header, Load() always says so.
#ifndef CUIMG_SERVER_NVJPEG_LIBRARY_H_
#define CUIMG_SERVER_NVJPEG_LIBRARY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

#ifdef CUIMG_HAVE_NVJPEG
#include <nvjpeg.h>
#endif

namespace cuimg {

// The entry points the decoder uses, resolved once; the library stays loaded while any copy of
// the shared_ptr lives (handles and states hold one).
class NvjpegLibrary {
 public:
  // Loads libnvjpeg.so.13: from the loader's search path (the executable's RUNPATH, which the
  // bundle and the Docker image point at their copy, then LD_LIBRARY_PATH and the system), else
  // from the copy the build found (CUIMG_NVJPEG_LIBRARY). UNAVAILABLE naming why: built without
  // nvjpeg.h, no library, or a missing symbol.
  static absl::StatusOr<std::shared_ptr<const NvjpegLibrary>> Load();

  ~NvjpegLibrary();
  NvjpegLibrary(const NvjpegLibrary&) = delete;
  NvjpegLibrary& operator=(const NvjpegLibrary&) = delete;

  // "13.0.4", and the file it came from ("?" when unknown), for the start-up line.
  const std::string& version() const { return version_; }
  const std::string& path() const { return path_; }

#ifdef CUIMG_HAVE_NVJPEG
  decltype(&::nvjpegGetProperty) GetProperty = nullptr;
  decltype(&::nvjpegCreateEx) CreateEx = nullptr;
  decltype(&::nvjpegDestroy) Destroy = nullptr;
  decltype(&::nvjpegJpegStateCreate) JpegStateCreate = nullptr;
  decltype(&::nvjpegJpegStateDestroy) JpegStateDestroy = nullptr;
  decltype(&::nvjpegDecode) Decode = nullptr;
  decltype(&::nvjpegDecodeBatchedInitialize) DecodeBatchedInitialize = nullptr;
  decltype(&::nvjpegDecodeBatched) DecodeBatched = nullptr;
  decltype(&::nvjpegDecodeBatchedSupported) DecodeBatchedSupported = nullptr;
  decltype(&::nvjpegJpegStreamCreate) JpegStreamCreate = nullptr;
  decltype(&::nvjpegJpegStreamDestroy) JpegStreamDestroy = nullptr;
  decltype(&::nvjpegJpegStreamParseHeader) JpegStreamParseHeader = nullptr;
  decltype(&::nvjpegJpegStreamGetFrameDimensions) JpegStreamGetFrameDimensions = nullptr;
  decltype(&::nvjpegJpegStreamGetComponentsNum) JpegStreamGetComponentsNum = nullptr;
#endif

 private:
  NvjpegLibrary() = default;
  void* handle_ = nullptr;  // dlopen's; closed by the destructor
  std::string version_;
  std::string path_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_NVJPEG_LIBRARY_H_
