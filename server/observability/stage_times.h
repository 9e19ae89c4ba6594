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
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_OBSERVABILITY_STAGE_TIMES_H_
