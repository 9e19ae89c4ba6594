#include "cuimg/common/malloc_policy.h"

#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#include <malloc.h>
#endif

// Sanitizers replace malloc: glibc's tunables would change nothing there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CUIMG_OWN_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define CUIMG_OWN_MALLOC 1
#endif
#endif

namespace cuimg {
namespace {

constexpr char kHugetlbTunable[] = "glibc.malloc.hugetlb";

// glibc.malloc.hugetlb came with glibc 2.35; older versions ignore it.
bool GlibcHasHugetlbTunable() {
#if defined(__GLIBC__) && !defined(CUIMG_OWN_MALLOC)
  int major = 0;
  int minor = 0;
  if (std::sscanf(gnu_get_libc_version(), "%d.%d", &major, &minor) != 2) return false;
  return major > 2 || (major == 2 && minor >= 35);
#else
  return false;
#endif
}

// The kernel's mode is "[always] madvise never", the active one bracketed.
bool TransparentHugePagesOn() {
  std::ifstream file("/sys/kernel/mm/transparent_hugepage/enabled");
  const std::string modes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return !modes.empty() && modes.find("[never]") == std::string::npos;
}

// The value GLIBC_TUNABLES `tunables` (name=value entries separated by ':') gives
// glibc.malloc.hugetlb; nullopt when it names no such entry.
std::optional<std::string> HugetlbValue(const std::string& tunables) {
  const std::string prefix = std::string(kHugetlbTunable) + "=";
  std::size_t start = 0;
  while (start <= tunables.size()) {
    std::size_t end = tunables.find(':', start);
    if (end == std::string::npos) end = tunables.size();
    if (tunables.compare(start, prefix.size(), prefix) == 0) {
      return tunables.substr(start + prefix.size(), end - start - prefix.size());
    }
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> HugePageTunables(const char* current) {
  const std::string tunables = current == nullptr ? "" : current;
  if (HugetlbValue(tunables).has_value()) return std::nullopt;
  const std::string added = std::string(kHugetlbTunable) + "=1";
  return tunables.empty() ? added : tunables + ":" + added;
}

bool MallocHugePagesRequested() {
  const char* current = std::getenv("GLIBC_TUNABLES");
  return current != nullptr && GlibcHasHugetlbTunable() && HugetlbValue(current) == "1";
}

void ExecWithHugePageMalloc(char** argv) {
  const char* current = std::getenv("GLIBC_TUNABLES");
  const std::optional<std::string> tunables = HugePageTunables(current);
  if (!tunables.has_value() || !GlibcHasHugetlbTunable() || !TransparentHugePagesOn()) return;
  char exe[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (length <= 0) return;
  exe[length] = '\0';
  const std::string previous = current == nullptr ? "" : current;
  setenv("GLIBC_TUNABLES", tunables->c_str(), 1);
  execv(exe, argv);
  // Still here: the exec failed (the binary replaced or gone); run on as we are.
  if (current == nullptr) {
    unsetenv("GLIBC_TUNABLES");
  } else {
    setenv("GLIBC_TUNABLES", previous.c_str(), 1);
  }
}

bool LimitMallocArenas(int arenas) {
#if defined(__GLIBC__) && defined(M_ARENA_MAX)
  return arenas <= 0 || mallopt(M_ARENA_MAX, arenas) == 1;
#else
  return arenas <= 0;
#endif
}

std::mutex MallocTrimmer::active_mu_;
MallocTrimmer* MallocTrimmer::active_ = nullptr;

bool MallocTrimmer::TrimsThisMalloc() {
#if defined(__GLIBC__) && !defined(CUIMG_OWN_MALLOC)
  return true;
#else
  return false;
#endif
}

bool MallocTrimmer::TrimAfterFree(std::size_t freed_bytes) {
#if defined(__GLIBC__) && !defined(CUIMG_OWN_MALLOC)
  if (freed_bytes < kPromptTrimBytes) return false;
  std::lock_guard<std::mutex> lock(active_mu_);
  if (active_ == nullptr) return false;
  active_->RequestTrim();
  return true;
#else
  (void)freed_bytes;
  return false;
#endif
}

void MallocTrimmer::RequestTrim() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    prompt_ = true;
  }
  cv_.notify_all();
}

MallocTrimmer::MallocTrimmer(std::chrono::milliseconds interval) {
#if defined(__GLIBC__)
  if (interval.count() <= 0) return;
  thread_ = std::thread([this, interval] {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait_for(lock, interval, [this] { return stopping_ || prompt_; });
      if (stopping_) break;
      prompt_ = false;
      lock.unlock();
      malloc_trim(0);
      trims_.fetch_add(1, std::memory_order_relaxed);
      lock.lock();
    }
  });
  std::lock_guard<std::mutex> lock(active_mu_);
  active_ = this;
#else
  (void)interval;
#endif
}

MallocTrimmer::~MallocTrimmer() {
  {
    std::lock_guard<std::mutex> lock(active_mu_);
    if (active_ == this) active_ = nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace cuimg
