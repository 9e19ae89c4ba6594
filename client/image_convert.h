// Small conversions the client needs to show results: colour to gray, any image to 8 bits for a
// PNG preview, and a contact sheet of several images.
#ifndef CUIMG_CLIENT_IMAGE_CONVERT_H_
#define CUIMG_CLIENT_IMAGE_CONVERT_H_

#include <string>
#include <vector>

#include "cuimg/common/image.h"

namespace cuimg {

// BGR (3 channels) to gray with ITU-R BT.601 weights (as OpenCV's cvtColor), rounded; 1 channel
// images are returned unchanged.
Image ToGray(const Image& image);
// One channel of any type to U8 for viewing: values mapped linearly from [lo, hi] to [0, 255]
// and clamped (lo == hi: the image's own min and max).
Image ToPreviewU8(const Image& image, double lo = 0, double hi = 0);
// The images side by side on rows no wider than max_width, on black.
Image ContactSheet(const std::vector<Image>& images, std::int64_t max_width);

// A rectangle in pixel coordinates (x, y: top-left), and an optional label (digits, '.', '-').
struct BoxOutline {
  int x, y, width, height;
  std::string label;
};
// A BGR copy of a U8 image (gray replicated, BGRA's alpha dropped) with each box's outline drawn
// `thickness` pixels wide, inside the box and clipped to the image, in `bgr`. A label is written
// in black on a `bgr` tag above the box's top-left corner (inside it when there is no room above);
// other characters than digits, '.' and '-' are left blank.
Image DrawBoxes(const Image& image, const std::vector<BoxOutline>& boxes, int thickness = 2,
                const std::uint8_t (&bgr)[3] = {0, 255, 0});

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IMAGE_CONVERT_H_
