#include "server/state/shared_memory_fault_guard.h"

#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"

namespace cuimg {
namespace {

// A slot of the table the handler searches. `sequence` only grows: a multiple of 4 is free, +1
// is being filled, +2 is live; releasing moves it to the next multiple of 4. The handler reads
// begin and end between two equal loads of a live sequence (a seqlock), so that a slot released
// and reused meanwhile is never mistaken for the mapping that faulted.
struct Slot {
  std::atomic<std::uint64_t> sequence{0};
  std::atomic<std::uintptr_t> begin{0};
  std::atomic<std::uintptr_t> end{0};  // page-rounded: the kernel maps whole pages
  std::atomic<bool> faulted{false};
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free &&
                  std::atomic<std::uintptr_t>::is_always_lock_free &&
                  std::atomic<bool>::is_always_lock_free,
              "the signal handler may only use lock-free atomics");

Slot g_slots[kMaxGuardedMappings];
// The disposition before ours, for faults that are not ours. Written once, before ours is set.
struct sigaction g_previous;

void PassOn(int signo, siginfo_t* info, void* context) {
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(signo, info, context);
    return;
  }
  if ((g_previous.sa_flags & SA_SIGINFO) == 0 && g_previous.sa_handler != SIG_DFL &&
      g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(signo);
    return;
  }
  // The default action (an ignored SIGBUS from a fault would retry forever): a fault repeats when
  // the handler returns and now ends the process; a sent SIGBUS is raised again.
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(SIGBUS, &fallback, nullptr);
  if (info->si_code <= 0) raise(SIGBUS);
}

// Only async-signal-safe work: atomics, and mmap (a plain system call on Linux, which is what
// Wayland compositors rely on for the same purpose).
void OnSigbus(int signo, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (Slot& slot : g_slots) {
    const std::uint64_t sequence = slot.sequence.load(std::memory_order_acquire);
    if (sequence % 4 != 2) continue;
    // Acquire loads, not a fence (which -fsanitize=thread refuses): the second load of the
    // sequence cannot move before them.
    const std::uintptr_t begin = slot.begin.load(std::memory_order_acquire);
    const std::uintptr_t end = slot.end.load(std::memory_order_acquire);
    if (slot.sequence.load(std::memory_order_relaxed) != sequence) continue;
    if (address < begin || address >= end) continue;
    // Zero pages over the whole mapping: the object is gone for the server, not just one page.
    void* replaced = mmap(reinterpret_cast<void*>(begin), end - begin, PROT_READ | PROT_WRITE,
                          MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (replaced == MAP_FAILED) break;
    slot.faulted.store(true, std::memory_order_release);
    errno = saved_errno;
    return;
  }
  errno = saved_errno;
  PassOn(signo, info, context);
}

absl::Status InstallHandlerOnce() {
  static const absl::Status installed = [] {
    if (sigaction(SIGBUS, nullptr, &g_previous) != 0) {
      return absl::InternalError(absl::StrCat("sigaction(SIGBUS): ", std::strerror(errno)));
    }
    struct sigaction action {};
    action.sa_sigaction = &OnSigbus;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGBUS, &action, nullptr) != 0) {
      return absl::InternalError(absl::StrCat("sigaction(SIGBUS): ", std::strerror(errno)));
    }
    return absl::OkStatus();
  }();
  return installed;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MappingFaultGuard>> MappingFaultGuard::Guard(void* data,
                                                                            std::size_t bytes) {
  if (absl::Status s = InstallHandlerOnce(); !s.ok()) return s;
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t end = begin + (bytes + page - 1) / page * page;
  for (std::size_t i = 0; i < kMaxGuardedMappings; ++i) {
    Slot& slot = g_slots[i];
    std::uint64_t sequence = slot.sequence.load(std::memory_order_relaxed);
    if (sequence % 4 != 0 ||
        !slot.sequence.compare_exchange_strong(sequence, sequence + 1, std::memory_order_acquire)) {
      continue;
    }
    slot.begin.store(begin, std::memory_order_relaxed);
    slot.end.store(end, std::memory_order_relaxed);
    slot.faulted.store(false, std::memory_order_relaxed);
    slot.sequence.store(sequence + 2, std::memory_order_release);
    return std::unique_ptr<MappingFaultGuard>(new MappingFaultGuard(i));
  }
  return MakeError(absl::StatusCode::kResourceExhausted, ErrorReason::kOverloaded, "",
                   absl::StrCat("the server has ", kMaxGuardedMappings,
                                " shared-memory regions mapped, its most at once; retry after "
                                "some are unregistered"));
}

MappingFaultGuard::~MappingFaultGuard() {
  Slot& slot = g_slots[slot_];
  slot.sequence.fetch_add(2, std::memory_order_release);  // live -> the next free
}

bool MappingFaultGuard::faulted() const {
  return g_slots[slot_].faulted.load(std::memory_order_acquire);
}

}  // namespace cuimg
