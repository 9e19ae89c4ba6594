// Detector model files (models/README.md): a small text format for a linear SVM over HOG
// descriptors, so that models are data the server loads from a directory.
//
//   cuimg-hog-svm 1                 format and version, the first non-comment line
//   window 64 128                   window width and height (multiples of 8 in [16, 1024])
//   gamma_correction 1              the default for requests that leave it unset (0 or 1)
//   description <text>              free text to the end of the line (origin, licence)
//   bias -6.66579151                added to the dot product
//   weights 3780                    the count, then that many values (any spacing)
//   0.05723 0.0201 ...
//
// Lines starting with '#' are comments. Keys come in this order, each once. Weights are in
// OpenCV's descriptor order (hog_types.h). The model's name is the file name without ".hogsvm".
#ifndef CUIMG_KERNELS_HOG_MODEL_FILE_H_
#define CUIMG_KERNELS_HOG_MODEL_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cuimg/kernels/hog_types.h"

namespace cuimg {

inline constexpr char kHogModelExtension[] = ".hogsvm";

// Parses a model file's text; `name` becomes the model's name. INVALID_ARGUMENT with the line
// number ("line 3: ...") for anything malformed, and ValidateHogModel's errors.
absl::StatusOr<HogModel> ParseHogModel(absl::string_view text, absl::string_view name);

// Reads and parses `path`, naming the model after the file. Errors name the file:
// "models/x.hogsvm: line 3: ...", NOT_FOUND when it cannot be read.
absl::StatusOr<HogModel> ReadHogModelFile(const std::string& path);

// The file text of a valid model (weights with 9 significant digits: float round trip exact).
std::string FormatHogModel(const HogModel& model);

}  // namespace cuimg

#endif  // CUIMG_KERNELS_HOG_MODEL_FILE_H_
