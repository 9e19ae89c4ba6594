#include "client/io/video_frames.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace cuimg {
namespace {

constexpr int kExecFailed = 127;

// Starts argv[0] with stdout into a pipe (stderr kept, so ffmpeg's errors reach the user);
// no shell, so paths need no quoting.
absl::StatusOr<std::pair<pid_t, std::FILE*>> Spawn(const std::vector<std::string>& args) {
  int fds[2];
  if (pipe(fds) != 0) return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(kExecFailed);
  }
  close(fds[1]);
  return std::make_pair(pid, fdopen(fds[0], "rb"));
}

int Reap(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

absl::StatusOr<VideoFrames> VideoFrames::Open(const std::string& path) {
  if (access(path.c_str(), R_OK) != 0) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  }
  absl::StatusOr<std::pair<pid_t, std::FILE*>> probe =
      Spawn({"ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
             "stream=width,height", "-of", "csv=p=0:s=x", path});
  if (!probe.ok()) return probe.status();
  std::string out;
  char buffer[256];
  while (std::fgets(buffer, sizeof(buffer), probe->second) != nullptr) out += buffer;
  std::fclose(probe->second);
  const int code = Reap(probe->first);
  if (code == kExecFailed) {
    return absl::FailedPreconditionError(
        "--video needs the ffmpeg and ffprobe programs (Debian package ffmpeg); or extract the "
        "frames to a directory and pass it as --input");
  }
  int width = 0;
  int height = 0;
  const std::vector<std::string> size =
      absl::StrSplit(absl::StripTrailingAsciiWhitespace(out), 'x');
  if (code != 0 || size.size() != 2 || !absl::SimpleAtoi(size[0], &width) ||
      !absl::SimpleAtoi(size[1], &height) || width < 1 || height < 1) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no video stream ffprobe can read"));
  }
  absl::StatusOr<std::pair<pid_t, std::FILE*>> decoder =
      Spawn({"ffmpeg", "-v", "error", "-nostdin", "-i", path, "-f", "rawvideo", "-pix_fmt", "bgr24",
             "-"});
  if (!decoder.ok()) return decoder.status();
  return VideoFrames(width, height, decoder->first, decoder->second);
}

VideoFrames::VideoFrames(VideoFrames&& other) noexcept
    : width_(other.width_),
      height_(other.height_),
      child_(std::exchange(other.child_, -1)),
      pipe_(std::exchange(other.pipe_, nullptr)) {}

VideoFrames::~VideoFrames() {
  // A decoder still running (the caller stopped early: --max_frames) is killed first: on a
  // broken pipe, or on SIGTERM (it then still writes its trailer), ffmpeg prints four lines of
  // errors; it holds nothing that needs a clean exit.
  if (child_ > 0 && pipe_ != nullptr && !std::feof(pipe_)) kill(child_, SIGKILL);
  if (pipe_ != nullptr) std::fclose(pipe_);
  if (child_ > 0) Reap(child_);
}

absl::StatusOr<bool> VideoFrames::Next(Image* frame) {
  Image image(PixelType::kU8, Extent{width_, height_, 1}, 3);
  const std::size_t got = std::fread(image.bytes(), 1, image.size_bytes(), pipe_);
  if (got == 0 && std::feof(pipe_)) return false;
  if (got != image.size_bytes()) {
    return absl::DataLossError(
        absl::StrCat("video: a frame ended after ", got, " of ", image.size_bytes(), " bytes"));
  }
  *frame = std::move(image);
  return true;
}

}  // namespace cuimg
