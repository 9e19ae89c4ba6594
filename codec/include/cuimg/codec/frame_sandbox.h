// Frames decoded in helper processes (cuimg-frame-decoder), for the decoders that abort the
// process on malformed input (FrameNeedsSandbox in dicom_frame.h): a helper that dies or hangs is
// a frame that does not decode, and the server lives on. Helpers start on demand, up to a limit,
// and stay for the next frames; each decodes one frame at a time.
#ifndef CUIMG_CODEC_FRAME_SANDBOX_H_
#define CUIMG_CODEC_FRAME_SANDBOX_H_

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "cuimg/codec/dicom_frame.h"

namespace cuimg {

struct FrameSandboxOptions {
  // The helper executable. Empty: cuimg-frame-decoder beside the running executable, then the
  // one the build made (CUIMG_FRAME_DECODER_BUILD_PATH).
  std::string helper_path;
  // Helpers running at once, at least 1; a decode waits for one to be free beyond that.
  int max_helpers = 4;
  // A helper that takes longer over one frame is killed and the frame refused.
  absl::Duration frame_timeout = absl::Seconds(20);
};

class FrameSandbox {
 public:
  // Checks that the helper exists and is executable (FAILED_PRECONDITION naming the path
  // otherwise); starts no process yet.
  static absl::StatusOr<std::unique_ptr<FrameSandbox>> Create(FrameSandboxOptions options);
  // Kills the idle helpers and waits for them; no Decode may be running.
  ~FrameSandbox();
  FrameSandbox(const FrameSandbox&) = delete;
  FrameSandbox& operator=(const FrameSandbox&) = delete;

  // DecodeFrame(syntax, description, frame, out, field) in a helper: the same values and errors,
  // and a helper that dies or overruns the timeout makes the frame INVALID_ARGUMENT with reason
  // CORRUPT_ENCODED_DATA and `field` (the next call starts a new helper). UNAVAILABLE when no
  // helper can be started. Thread-safe; blocks while max_helpers decodes are running.
  absl::Status Decode(FrameSyntax syntax, const FrameDescription& description,
                      absl::Span<const std::uint8_t> frame, absl::Span<std::uint8_t> out,
                      absl::string_view field);

  const std::string& helper_path() const { return options_.helper_path; }
  // Helpers started and helpers lost (died or killed) since creation, for tests and logs.
  int started() const;
  int lost() const;

 private:
  struct Helper {
    pid_t pid = -1;
    int fd = -1;  // the parent's end of its socket
  };
  explicit FrameSandbox(FrameSandboxOptions options) : options_(std::move(options)) {}
  absl::StatusOr<Helper> Acquire();
  void Release(Helper helper);
  // Kills (when still running) and reaps the helper; returns why it ended ("signal 6").
  std::string Discard(Helper helper);

  FrameSandboxOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable free_;
  std::vector<Helper> idle_;
  int running_ = 0;  // helpers alive, idle or busy
  int started_ = 0;
  int lost_ = 0;
};

}  // namespace cuimg

#endif  // CUIMG_CODEC_FRAME_SANDBOX_H_
