// cuimg-frame-decoder: FrameSandbox's helper process (codec/frame_sandbox.h). Reads requests
// from its socket (fd 3) and answers each with DecodeFrame's outcome, until the socket closes.
// A decoder that aborts on a malformed frame ends this process alone. Not meant to be run by
// hand (--version says what it is).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "codec/src/frame_sandbox_protocol.h"
#include "cuimg/codec/dicom_frame.h"

namespace {

bool Answer(int fd, const absl::Status& status, const std::vector<std::uint8_t>& values) {
  cuimg::sandbox::Reply reply;
  reply.code = static_cast<std::int32_t>(status.code());
  const std::string message(status.message().substr(0, 4096));
  reply.message_bytes = static_cast<std::uint32_t>(message.size());
  reply.pixel_bytes = status.ok() ? values.size() : 0;
  return cuimg::sandbox::WriteAll(fd, &reply, sizeof reply) &&
         cuimg::sandbox::WriteAll(fd, message.data(), message.size()) &&
         (!status.ok() || cuimg::sandbox::WriteAll(fd, values.data(), values.size()));
}

}  // namespace

int main(int argc, char** argv) {
  using cuimg::sandbox::kHelperFd;
  if (argc > 1 && std::string(argv[1]) == "--version") {
    std::puts("cuimg-frame-decoder: cuimg-server's helper for DICOM frames (not run by hand)");
    return 0;
  }
  // Only the socket: whatever else the server had open stays out of reach of a decoder that
  // malformed input may have taken over.
  for (int fd = 0; fd < 1024; ++fd) {
    if (fd != kHelperFd) close(fd);
  }
  // What an aborting library prints (an assertion's text) is not for the server's log, which a
  // client could otherwise fill with it.
  const int null = open("/dev/null", O_RDWR);
  if (null >= 0 && null != STDERR_FILENO) dup2(null, STDERR_FILENO);
  signal(SIGPIPE, SIG_IGN);
  std::vector<std::uint8_t> frame, values;
  while (true) {
    cuimg::sandbox::Request request;
    if (!cuimg::sandbox::ReadAll(kHelperFd, &request, sizeof request)) return 0;  // closed
    if (request.magic != cuimg::sandbox::kRequestMagic ||
        request.frame_bytes > cuimg::sandbox::kMaxFrameBytes ||
        request.syntax >= cuimg::DecodableFrameSyntaxes().size()) {
      return 2;
    }
    frame.resize(request.frame_bytes);
    if (!cuimg::sandbox::ReadAll(kHelperFd, frame.data(), frame.size())) return 0;
    cuimg::FrameDescription d;
    d.rows = request.rows;
    d.columns = request.columns;
    d.bits_allocated = request.bits_allocated;
    d.bits_stored = request.bits_stored;
    d.is_signed = request.is_signed != 0;
    absl::Status status = cuimg::ValidateFrameDescription(d, "description");
    if (status.ok()) {
      values.resize(cuimg::DecodedFrameBytes(d));
      // No field: FrameSandbox::Decode names the frame in what it returns.
      status = cuimg::DecodeFrame(cuimg::DecodableFrameSyntaxes()[request.syntax], d, frame,
                                  absl::MakeSpan(values), "");
    }
    if (!Answer(kHelperFd, status, values)) return 0;
  }
}
