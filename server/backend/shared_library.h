// Opening a library the server loads at run time (nvJPEG, nvJPEG2000), so that a server without
// it still runs: one rule for where it is looked for and what the refusal says.
#ifndef CUIMG_SERVER_BACKEND_SHARED_LIBRARY_H_
#define CUIMG_SERVER_BACKEND_SHARED_LIBRARY_H_

#include <dlfcn.h>

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace cuimg {

// dlopen()s `soname` (the loader's search path first: the bundle's and the image's lib/), then
// `fallback` when it is not null (the path found at configure time). UNAVAILABLE naming
// `what` and every path tried when neither opens. The caller owns the handle (dlclose).
inline absl::StatusOr<void*> OpenSharedLibrary(const char* soname, const char* fallback,
                                               const char* what) {
  std::string tried = soname;
  void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr && fallback != nullptr) {
    handle = dlopen(fallback, RTLD_NOW | RTLD_LOCAL);
    absl::StrAppend(&tried, ", ", fallback);
  }
  if (handle == nullptr) {
    const char* error = dlerror();
    return absl::UnavailableError(absl::StrCat("no ", what, " library (tried ", tried,
                                               "): ", error != nullptr ? error : "not found"));
  }
  return handle;
}

// Sets `*fn` to `name`'s address in `handle`; false when the library lacks it (dlerror() says).
template <typename Fn>
bool ResolveSymbol(void* handle, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  return *fn != nullptr;
}

}  // namespace cuimg

#endif  // CUIMG_SERVER_BACKEND_SHARED_LIBRARY_H_
