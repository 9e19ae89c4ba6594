// What one request spent in each stage of the server: written by the backends and the handlers,
// sent in the cuimg-timing trailer and recorded by the metrics.
#ifndef CUIMG_SERVER_OBSERVABILITY_STAGE_TIMES_H_
#define CUIMG_SERVER_OBSERVABILITY_STAGE_TIMES_H_

namespace cuimg {

// Server-side time of one request by stage, microseconds, and the device that ran it: the
// DeviceStatus::id of its slot on either backend (-1 until a device is picked).
struct StageTimes {
  double queue_us = 0;
  double decode_us = 0;
  // The input to the device, with the copy of its pixels out of the received bytes where the
  // server makes one (wire_pixels.h), as it once counted the copy into pinned staging.
  double h2d_us = 0;
  double kernel_us = 0;
  double d2h_us = 0;
  double total_us = 0;
  int device = -1;
  // The device an encoded input was decoded on (nvJPEG); -1 when it was decoded on the CPU or
  // there was none (decode_us 0).
  int decode_device = -1;
  // Why a JPEG went to the CPU decoder on a backend with a GPU decoder: "header" (the marker walk
  // found a fault, or TurboJPEG's header read disagrees with it or is over the limits),
  // "unsupported" (JpegGpuRefusal), "nvjpeg" (the GPU decode failed); DICOM frames that went to
  // the host because the GPU frame decoder failed: "nvjpeg2000"; null otherwise. Static.
  const char* decode_fallback = nullptr;
  // The batch of GPU decodes that decoded the input (leader_batch.h): its size (0: none, as on
  // the CPU); `decode_batch_first` on one call of each batch, so that batches are counted once,
  // with how long that batch waited for decodes on their way (`decode_batch_wait_us`).
  int decode_batch = 0;
  bool decode_batch_first = false;
  double decode_batch_wait_us = 0;
  // The frames of the HOG launches that detected in the input (DetectBatcher on the CUDA
  // backend; 0 elsewhere), `detect_batch_first` on one call of each, and how long the frame
  // waited for its launches.
  int detect_batch = 0;
  bool detect_batch_first = false;
  double detect_batch_wait_us = 0;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_OBSERVABILITY_STAGE_TIMES_H_
