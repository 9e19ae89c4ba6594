#include "cuimg/codec/frame_sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "frame_sandbox_protocol.h"

extern char** environ;

namespace cuimg {
namespace sandbox {

bool ReadAll(int fd, void* data, std::size_t size) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool WriteAll(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    // MSG_NOSIGNAL: a helper that died is an error here, not a SIGPIPE for the server.
    const ssize_t n = send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace sandbox

namespace {

// Reads exactly `size` bytes before `deadline`: OK, DEADLINE_EXCEEDED, or DATA_LOSS when the
// helper closed its end (it died).
absl::Status ReadBefore(int fd, void* data, std::size_t size, absl::Time deadline) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return absl::DeadlineExceededError("");
    pollfd waiting{fd, POLLIN, 0};
    const int ready = poll(&waiting, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return absl::DataLossError(std::strerror(errno));
    if (ready == 0) continue;  // the deadline is checked above
    const ssize_t n = read(fd, p, size);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return absl::DataLossError("");
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return absl::OkStatus();
}

std::string DefaultHelperPath() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path beside = self.parent_path() / "cuimg-frame-decoder";
    if (access(beside.c_str(), X_OK) == 0) return beside.string();
  }
#ifdef CUIMG_FRAME_DECODER_BUILD_PATH
  return CUIMG_FRAME_DECODER_BUILD_PATH;
#else
  return "cuimg-frame-decoder";
#endif
}

}  // namespace

absl::StatusOr<std::unique_ptr<FrameSandbox>> FrameSandbox::Create(FrameSandboxOptions options) {
  if (options.helper_path.empty()) options.helper_path = DefaultHelperPath();
  if (access(options.helper_path.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no frame decoder helper at ", options.helper_path, ": ", std::strerror(errno)));
  }
  if (options.max_helpers < 1) options.max_helpers = 1;
  return std::unique_ptr<FrameSandbox>(new FrameSandbox(std::move(options)));
}

FrameSandbox::~FrameSandbox() {
  for (const Helper& h : idle_) Discard(h);
}

int FrameSandbox::started() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return started_;
}

int FrameSandbox::lost() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lost_;
}

absl::StatusOr<FrameSandbox::Helper> FrameSandbox::Acquire() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    free_.wait(lock, [this] { return !idle_.empty() || running_ < options_.max_helpers; });
    if (!idle_.empty()) {
      Helper h = idle_.back();
      idle_.pop_back();
      return h;
    }
    ++running_;  // reserved before the spawn, which runs unlocked
  }
  const auto unreserve = [this] {
    std::lock_guard<std::mutex> lock(mutex_);
    --running_;
    free_.notify_one();
  };
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    const std::string why = std::strerror(errno);
    unreserve();
    return absl::UnavailableError(absl::StrCat("frame decoder socket: ", why));
  }
  // The helper gets its end as fd 3; dup2 clears close-on-exec on the copy only.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], sandbox::kHelperFd);
  char* argv[] = {const_cast<char*>("cuimg-frame-decoder"), nullptr};
  pid_t pid = -1;
  const int error =
      posix_spawn(&pid, options_.helper_path.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (error != 0) {
    close(fds[0]);
    unreserve();
    return absl::UnavailableError(absl::StrCat("cannot start the frame decoder ",
                                               options_.helper_path, ": ", std::strerror(error)));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ++started_;
  return Helper{pid, fds[0]};
}

void FrameSandbox::Release(Helper helper) {
  std::lock_guard<std::mutex> lock(mutex_);
  idle_.push_back(helper);
  free_.notify_one();
}

std::string FrameSandbox::Discard(Helper helper) {
  close(helper.fd);  // a helper waiting for a request sees its end and exits
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 100 && (done = waitpid(helper.pid, &status, WNOHANG)) == 0; ++i) {
    usleep(1000);
  }
  if (done == 0) {  // still running: overran its frame, or stuck
    kill(helper.pid, SIGKILL);
    while (waitpid(helper.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --running_;
    free_.notify_one();
  }
  if (WIFSIGNALED(status)) return absl::StrCat("signal ", WTERMSIG(status));
  return absl::StrCat("exit ", WEXITSTATUS(status));
}

absl::Status FrameSandbox::Decode(FrameSyntax syntax, const FrameDescription& d,
                                  absl::Span<const std::uint8_t> frame,
                                  absl::Span<std::uint8_t> out, absl::string_view field) {
  if (out.size() != DecodedFrameBytes(d)) {
    return absl::InternalError(absl::StrCat(field, ": an output of ", out.size(),
                                            " bytes for a frame of ", DecodedFrameBytes(d)));
  }
  absl::StatusOr<Helper> helper = Acquire();
  if (!helper.ok()) return helper.status();
  sandbox::Request request;
  request.syntax = static_cast<std::uint32_t>(syntax);
  request.rows = d.rows;
  request.columns = d.columns;
  request.bits_allocated = d.bits_allocated;
  request.bits_stored = d.bits_stored;
  request.is_signed = d.is_signed ? 1 : 0;
  request.frame_bytes = frame.size();
  const absl::Time deadline = absl::Now() + options_.frame_timeout;
  sandbox::Reply reply;
  absl::Status io;
  if (!sandbox::WriteAll(helper->fd, &request, sizeof request) ||
      !sandbox::WriteAll(helper->fd, frame.data(), frame.size())) {
    io = absl::DataLossError("");
  } else {
    io = ReadBefore(helper->fd, &reply, sizeof reply, deadline);
  }
  std::string message;
  if (io.ok() && (reply.magic != sandbox::kReplyMagic || reply.message_bytes > 4096 ||
                  (reply.code == 0 && reply.pixel_bytes != out.size()))) {
    io = absl::InternalError("a reply out of protocol");
  }
  if (io.ok()) {
    message.resize(reply.message_bytes);
    io = ReadBefore(helper->fd, message.data(), message.size(), deadline);
  }
  if (io.ok() && reply.code == 0) io = ReadBefore(helper->fd, out.data(), out.size(), deadline);
  if (!io.ok()) {
    const bool overran = absl::IsDeadlineExceeded(io);
    const std::string ended = Discard(*helper);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++lost_;
    }
    if (absl::IsInternal(io)) return io;
    return InvalidFieldError(
        ErrorReason::kCorruptEncodedData, field,
        absl::StrCat("a ", FrameSyntaxName(syntax), " frame that does not decode: the decoder ",
                     overran
                         ? absl::StrCat("took over ", absl::FormatDuration(options_.frame_timeout))
                         : absl::StrCat("stopped on it (", ended, ")")));
  }
  Release(*helper);
  if (reply.code == 0) return absl::OkStatus();
  if (reply.code == static_cast<int>(absl::StatusCode::kInvalidArgument)) {
    return InvalidFieldError(ErrorReason::kCorruptEncodedData, field, message);
  }
  return absl::Status(static_cast<absl::StatusCode>(reply.code), message);
}

}  // namespace cuimg
