// Frames of a video file, decoded by the `ffmpeg` program (Debian package ffmpeg) in a child
// process and read as raw BGR from a pipe: the client links no video library, and a machine
// without ffmpeg can still run `cuimg detect` on a directory of frames.
#ifndef CUIMG_CLIENT_IO_VIDEO_FRAMES_H_
#define CUIMG_CLIENT_IO_VIDEO_FRAMES_H_

#include <sys/types.h>

#include <cstdio>
#include <string>

#include "absl/status/statusor.h"
#include "cuimg/common/image.h"

namespace cuimg {

class VideoFrames {
 public:
  // Probes the first video stream's size (ffprobe) and starts decoding it (ffmpeg).
  // FAILED_PRECONDITION naming the programs when they are missing; NOT_FOUND or INVALID_ARGUMENT
  // when the file cannot be read or has no video stream.
  static absl::StatusOr<VideoFrames> Open(const std::string& path);

  VideoFrames(VideoFrames&& other) noexcept;
  VideoFrames& operator=(VideoFrames&&) = delete;
  VideoFrames(const VideoFrames&) = delete;
  VideoFrames& operator=(const VideoFrames&) = delete;
  // Closes the pipe and reaps the decoder.
  ~VideoFrames();

  int width() const { return width_; }
  int height() const { return height_; }
  // The next frame (U8, 3 channels, BGR), or false at the end of the stream.
  absl::StatusOr<bool> Next(Image* frame);

 private:
  VideoFrames(int width, int height, pid_t child, std::FILE* pipe)
      : width_(width), height_(height), child_(child), pipe_(pipe) {}

  int width_;
  int height_;
  pid_t child_;
  std::FILE* pipe_;
};

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_VIDEO_FRAMES_H_
