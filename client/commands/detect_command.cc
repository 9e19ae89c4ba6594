// `cuimg detect`: pedestrian detection on an image (one DetectPedestrians call), or on a directory
// of frames or a video (frames decoded by the ffmpeg program) over one DetectStream call. One JSON
// line per image on stdout with the boxes; with --output, the image with the boxes drawn and
// labelled by score (a PNG, or for frames one PNG per frame in a directory, with the run's
// detections in one detections.json there). Outputs appear only once the run has succeeded
// (atomic_output.h). A frame folder stops at its first unreadable file (exit 3) unless
// --keep_going, which reports it, goes on with the rest and exits 3 at the end.
// `cuimg models`: the detector models the server loaded.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "client/commands/command_requests.h"
#include "client/commands/commands.h"
#include "client/image_convert.h"
#include "client/io/atomic_output.h"
#include "client/io/image_file.h"
#include "client/io/video_frames.h"
#include "client/io/volume_file.h"
#include "client/request_building.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/v1/imaging_service.grpc.pb.h"
#include "proto/wire_contract.h"

namespace cuimg {
namespace {

constexpr char kDetectUsage[] =
    "usage: cuimg detect (--input IMAGE|DIR | --video FILE) [--output OUT.png|DIR] [--model NAME] "
    "[--hit_threshold 0] [--win_stride 8] [--padding 0] [--scale 1.05] [--max_levels 64] "
    "[--gamma model|on|off] [--grouping rectangles|none] [--group_threshold 2] [--group_eps 0.2] "
    "[--every 1] [--max_frames 0] [--keep_going]\n";

int Usage(const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "error: %s\n", why.c_str());
  std::fprintf(stderr, "%s", kDetectUsage);
  return kExitUsage;
}

bool IsImagePath(const std::string& path) {
  const std::string lower = absl::AsciiStrToLower(path);
  return absl::EndsWith(lower, ".png") || absl::EndsWith(lower, ".jpg") ||
         absl::EndsWith(lower, ".jpeg");
}

// One image to detect in: its pixels (for drawing) and how it travels.
struct Frame {
  std::string source;  // file path, or "video:N"
  int index = 0;       // in the directory or the video
  Image pixels;
  std::string encoded;  // the file's PNG/JPEG bytes when it is one (the server decodes them)
  std::string output;   // where the boxed image goes, or empty
  std::chrono::steady_clock::time_point sent;
};

// A stream's frames come from this: false at the end.
using FrameSource = std::function<absl::StatusOr<bool>(Frame*)>;

// Frames sent on a DetectStream and not yet answered, at most: as many as the server holds by
// default (--stream_frames_in_flight), so that its decode batches fill; the client holds as many
// decoded frames (for drawing) and no more.
constexpr std::size_t kStreamWindow = 16;

void SetInput(const Frame& frame, v1::DetectPedestriansRequest* request) {
  if (!frame.encoded.empty()) {
    request->mutable_input()->set_encoded(frame.encoded);
  } else {
    ToProtoImage(frame.pixels, request->mutable_input()->mutable_image());
  }
}

class Detector {
 public:
  // Boxed images are written through `outputs` (staged until the run commits them).
  Detector(const ConnectionOptions& connection, v1::DetectPedestriansRequest base,
           StagedOutputs* outputs)
      : connection_(connection),
        base_(std::move(base)),
        stub_(v1::Imaging::NewStub(MakeChannel(connection))),
        outputs_(outputs) {}

  // Detects in `frame`, prints its JSON line, writes the boxed image. Exit code.
  int Run(const Frame& frame) {
    v1::DetectPedestriansRequest request = base_;
    SetInput(frame, &request);
    grpc::ClientContext context;
    PrepareContext(connection_, &context);
    v1::DetectPedestriansResponse response;
    const auto start = std::chrono::steady_clock::now();
    const grpc::Status status = stub_->DetectPedestrians(&context, request, &response);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!status.ok()) {
      std::fprintf(stderr, "%s: ", frame.source.c_str());
      return ReportRpcError(status);
    }
    wall_ms_ += ms;
    return Answered(frame, response, ms, TimingTrailerText(context));
  }

  // Detects in every frame of `next` over one DetectStream: a thread reads and sends frames while
  // this one takes the results in order (printing and drawing them), at most kStreamWindow frames
  // unanswered. Exit code: the stream's error, or the first frame that could not be read or
  // written.
  int Stream(const FrameSource& next) {
    // No deadline: a video's frames take as long as they take (--timeout bounds unary calls).
    grpc::ClientContext context;
    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<grpc::ClientReaderWriter<v1::DetectFrame, v1::DetectFrameResult>> stream =
        stub_->DetectStream(&context);
    std::mutex mu;
    std::condition_variable room;
    std::deque<Frame> sent;  // unanswered, in order
    bool stop = false;
    absl::Status read_error;
    std::thread sender([&] {
      for (;;) {
        Frame frame;
        absl::StatusOr<bool> more = next(&frame);
        if (!more.ok() || !*more) {
          std::lock_guard<std::mutex> lock(mu);
          read_error = more.status();
          break;
        }
        v1::DetectFrame message;
        *message.mutable_request() = base_;
        SetInput(frame, message.mutable_request());
        message.set_id(frame.source);
        {
          std::unique_lock<std::mutex> lock(mu);
          room.wait(lock, [&] { return stop || sent.size() < kStreamWindow; });
          if (stop) break;
          frame.sent = std::chrono::steady_clock::now();
          frame.encoded.clear();  // sent; the pixels stay for drawing
          sent.push_back(std::move(frame));
        }
        if (!stream->Write(message)) break;  // the stream ended; Finish says why
      }
      stream->WritesDone();
    });
    int code = kExitOk;
    v1::DetectFrameResult result;
    while (code == kExitOk && stream->Read(&result)) {
      Frame frame;
      {
        std::lock_guard<std::mutex> lock(mu);
        frame = std::move(sent.front());
        sent.pop_front();
      }
      room.notify_one();
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - frame.sent)
              .count();
      code = Answered(frame, result.result(), ms, result.timing());
    }
    if (code != kExitOk) context.TryCancel();
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    room.notify_one();
    sender.join();
    const grpc::Status status = stream->Finish();
    wall_ms_ +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (code != kExitOk) return code;
    if (!status.ok()) return ReportRpcError(status);
    if (!read_error.ok()) return ReportReadError(read_error);
    return kExitOk;
  }

  void Summarize() const {
    std::fprintf(stderr,
                 "%d images, %lld detections, %.2f ms per image round trip, %.1f images/s\n",
                 frames_, detections_, frames_ > 0 ? round_trip_ms_ / frames_ : 0.0,
                 wall_ms_ > 0 ? 1e3 * frames_ / wall_ms_ : 0.0);
  }

  // The run's detections, one entry per image, as detections.json holds them.
  const nlohmann::json& detections() const { return all_; }

 private:
  // Prints the frame's line, draws its boxes (labelled by score), keeps it for detections.json.
  int Answered(const Frame& frame, const v1::DetectPedestriansResponse& response, double ms,
               const std::string& server_timing) {
    nlohmann::json boxes = nlohmann::json::array();
    std::vector<BoxOutline> outlines;
    for (const v1::Detection& d : response.detections()) {
      boxes.push_back({{"x", d.x()},
                       {"y", d.y()},
                       {"width", d.width()},
                       {"height", d.height()},
                       {"score", d.score()},
                       {"scale", d.scale()}});
      outlines.push_back(
          BoxOutline{d.x(), d.y(), d.width(), d.height(), absl::StrFormat("%.2f", d.score())});
    }
    nlohmann::json line = {
        {"source", frame.source},
        {"frame", frame.index},
        {"width", frame.pixels.extent().width},
        {"height", frame.pixels.extent().height},
        {"model", response.model()},
        {"levels", response.levels()},
        {"windows", response.windows()},
        {"detections", boxes},
        {"round_trip_ms", std::round(ms * 1000) / 1000},
    };
    if (!server_timing.empty()) line["server"] = server_timing;
    std::printf("%s\n", line.dump().c_str());
    std::fflush(stdout);
    all_.push_back(line);
    ++frames_;
    detections_ += response.detections_size();
    round_trip_ms_ += ms;
    if (!frame.output.empty()) {
      const Image boxed = DrawBoxes(frame.pixels, outlines);
      absl::StatusOr<std::string> temp = outputs_->Stage(frame.output);
      absl::Status s =
          temp.ok() ? outputs_->Named(WriteImageFile(*temp, boxed.view())) : temp.status();
      if (!s.ok()) {
        std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
        return kExitUsage;
      }
    }
    return kExitOk;
  }

  ConnectionOptions connection_;
  v1::DetectPedestriansRequest base_;
  std::unique_ptr<v1::Imaging::Stub> stub_;
  StagedOutputs* outputs_;
  int frames_ = 0;
  long long detections_ = 0;
  double round_trip_ms_ = 0;
  double wall_ms_ = 0;
  nlohmann::json all_ = nlohmann::json::array();
};

// detections.json in the output directory: the run's parameters, every frame's detections and
// the files --keep_going skipped.
int WriteRunJson(const std::string& path, const DetectCommand& c, const nlohmann::json& frames,
                 const nlohmann::json& skipped, StagedOutputs* outputs) {
  const nlohmann::json run = {
      {"source", c.video.empty() ? c.input : c.video},
      {"model", c.model.empty() ? "default" : c.model},
      {"hit_threshold", c.hit_threshold},
      {"every", c.every},
      {"frames", frames},
      {"skipped", skipped},
  };
  absl::StatusOr<std::string> temp = outputs->Stage(path);
  absl::Status s =
      temp.ok() ? outputs->Named(WriteTextFile(*temp, run.dump(1) + "\n")) : temp.status();
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
    return kExitUsage;
  }
  return kExitOk;
}

absl::StatusOr<Frame> ReadFrame(const std::string& path, const std::string& output) {
  Frame frame;
  frame.source = path;
  frame.output = output;
  CUIMG_ASSIGN_OR_RETURN(frame.pixels, ReadImageFile(path));
  if (IsImagePath(path)) {
    CUIMG_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadFileBytes(path));
    frame.encoded.assign(bytes.begin(), bytes.end());
  }
  return frame;
}

bool Selected(const DetectCommand& c, int index, int done) {
  return index % c.every == 0 && (c.max_frames == 0 || done < c.max_frames);
}

}  // namespace

int RunDetect(const ConnectionOptions& connection, const DetectCommand& c) {
  if (c.input.empty() == c.video.empty()) return Usage("give one of --input and --video");
  absl::StatusOr<v1::DetectPedestriansRequest> base = DetectParameters(c);
  if (!base.ok()) return Usage(std::string(base.status().message()));
  if (c.every < 1 || c.max_frames < 0) return Usage("--every must be >= 1, --max_frames >= 0");
  namespace fs = std::filesystem;
  std::error_code error;
  const bool sequence = !c.video.empty() || fs::is_directory(c.input, error);
  // Every output is staged and moved into place at the end: a run that fails leaves none.
  StagedOutputs outputs;
  if (sequence && !c.output.empty()) {
    if (absl::Status s = outputs.CreateFolder(c.output); !s.ok()) {
      return Usage(std::string(s.message()));
    }
  }
  Detector detector(connection, *std::move(base), &outputs);
  nlohmann::json skipped = nlohmann::json::array();  // --keep_going: files not read
  int code = kExitOk;
  if (!c.video.empty()) {
    absl::StatusOr<VideoFrames> video = VideoFrames::Open(c.video);
    if (!video.ok()) return ReportReadError(video.status());
    int index = 0;
    int done = 0;
    code = detector.Stream([&](Frame* frame) -> absl::StatusOr<bool> {
      for (; c.max_frames == 0 || done < c.max_frames; ++index) {
        CUIMG_ASSIGN_OR_RETURN(const bool more, video->Next(&frame->pixels));
        if (!more) return false;
        if (!Selected(c, index, done)) continue;
        frame->index = index;
        frame->source = absl::StrFormat("%s:%d", c.video, index);
        if (!c.output.empty()) {
          frame->output = absl::StrFormat("%s/frame_%05d.png", c.output, index);
        }
        ++index;
        ++done;
        return true;
      }
      return false;
    });
  } else if (sequence) {
    std::vector<std::string> paths;
    for (const fs::directory_entry& e : fs::directory_iterator(c.input, error)) {
      if (e.is_regular_file() && IsImagePath(e.path().string())) paths.push_back(e.path().string());
    }
    if (error) return Usage(c.input + ": " + error.message());
    std::sort(paths.begin(), paths.end());
    if (paths.empty()) return Usage(c.input + ": no .png or .jpg files");
    int index = 0;
    int done = 0;
    // On the stream's sending thread; `skipped` is read once the stream has ended.
    code = detector.Stream([&](Frame* frame) -> absl::StatusOr<bool> {
      for (; index < static_cast<int>(paths.size()); ++index) {
        if (!Selected(c, index, done)) continue;
        const std::string out =
            c.output.empty()
                ? ""
                : c.output + "/" + fs::path(paths[index]).stem().string() + "_boxes.png";
        absl::StatusOr<Frame> read = ReadFrame(paths[index], out);
        if (!read.ok() && c.keep_going) {
          std::fprintf(stderr, "error: %s (skipped: --keep_going)\n",
                       std::string(read.status().message()).c_str());
          skipped.push_back(
              {{"source", paths[index]}, {"error", std::string(read.status().message())}});
          continue;
        }
        if (!read.ok()) return read.status();
        *frame = *std::move(read);
        frame->index = index;
        ++index;
        ++done;
        return true;
      }
      return false;
    });
  } else {
    absl::StatusOr<Frame> frame = ReadFrame(c.input, c.output);
    if (!frame.ok()) return ReportReadError(frame.status());
    code = detector.Run(*frame);
  }
  detector.Summarize();
  if (code != kExitOk) return code;  // `outputs` goes with what it staged
  if (sequence && !c.output.empty()) {
    code = WriteRunJson(c.output + "/detections.json", c, detector.detections(), skipped, &outputs);
    if (code != kExitOk) return code;
  }
  if (absl::Status s = outputs.Commit(); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
    return kExitUsage;
  }
  if (!skipped.empty()) {
    std::fprintf(stderr, "error: %zu of the files in %s could not be read (listed above)\n",
                 skipped.size(), c.input.c_str());
    return kExitBadData;
  }
  return kExitOk;
}

int RunModels(const ConnectionOptions& connection, const ModelsCommand& c) {
  auto stub = v1::Imaging::NewStub(MakeChannel(connection));
  grpc::ClientContext context;
  PrepareContext(connection, &context);
  v1::ListModelsResponse response;
  const grpc::Status status = stub->ListModels(&context, v1::ListModelsRequest{}, &response);
  if (!status.ok()) return ReportRpcError(status);
  if (c.json) {
    nlohmann::json models = nlohmann::json::array();
    for (const v1::DetectorModel& m : response.models()) {
      models.push_back({{"name", m.name()},
                        {"window_width", m.window_width()},
                        {"window_height", m.window_height()},
                        {"descriptor_size", m.descriptor_size()},
                        {"gamma_correction", m.gamma_correction()},
                        {"description", m.description()}});
    }
    std::printf("%s\n", nlohmann::json{{"models", models}}.dump().c_str());
    return kExitOk;
  }
  for (const v1::DetectorModel& m : response.models()) {
    std::printf("%-28s %4ux%-4u %5u weights  gamma %-3s  %s\n", m.name().c_str(), m.window_width(),
                m.window_height(), m.descriptor_size(), m.gamma_correction() ? "on" : "off",
                m.description().c_str());
  }
  return kExitOk;
}

}  // namespace cuimg
