#include "client/morphology_spec.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cuimg/common/status_macros.h"

namespace cuimg {

absl::StatusOr<std::array<int, 3>> ParseSize(absl::string_view text) {
  const std::vector<absl::string_view> parts = absl::StrSplit(text, 'x');
  std::array<int, 3> size = {0, 0, 0};
  if (parts.size() < 2 || parts.size() > 3) {
    return absl::InvalidArgumentError(absl::StrCat("size '", text, "': expected WxH or WxHxD"));
  }
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (!absl::SimpleAtoi(parts[i], &size[i]) || size[i] < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("size '", text, "': '", parts[i], "' is not a positive integer"));
    }
  }
  return size;
}

absl::StatusOr<v1::ElementRadius> ParseRadius(absl::string_view text) {
  if (!absl::ConsumeSuffix(&text, "mm")) {
    return absl::NotFoundError(absl::StrCat("'", text, "' is not a radius in mm"));
  }
  const std::vector<absl::string_view> parts = absl::StrSplit(text, 'x');
  if (parts.size() != 1 && parts.size() != 2 && parts.size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("radius '", text, "mm': expected Rmm, RXxRYmm or RXxRYxRZmm"));
  }
  double r[3] = {0, 0, 0};
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (!absl::SimpleAtod(parts[i], &r[i]) || !(r[i] >= 0) || !std::isfinite(r[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("radius '", text, "mm': '", parts[i], "' is not a non-negative number"));
    }
  }
  if (parts.size() == 1) r[1] = r[2] = r[0];
  v1::ElementRadius radius;
  radius.set_x_mm(r[0]);
  radius.set_y_mm(r[1]);
  radius.set_z_mm(r[2]);
  return radius;
}

std::string DescribeElement(const v1::StructuringElement& element) {
  const char* shape = "custom";
  switch (element.shape()) {
    case v1::ELEMENT_SHAPE_RECT:
      shape = "rect";
      break;
    case v1::ELEMENT_SHAPE_ELLIPSE:
      shape = "ellipse";
      break;
    case v1::ELEMENT_SHAPE_CROSS:
      shape = "cross";
      break;
    default:
      break;
  }
  std::string text = absl::StrCat(shape, " ", element.width(), "x", element.height());
  if (element.depth() > 0) absl::StrAppend(&text, "x", element.depth());
  return text;
}

absl::StatusOr<v1::MorphologyOp> ParseOp(absl::string_view text) {
  if (text == "erode") return v1::MORPHOLOGY_OP_ERODE;
  if (text == "dilate") return v1::MORPHOLOGY_OP_DILATE;
  if (text == "open") return v1::MORPHOLOGY_OP_OPEN;
  if (text == "close") return v1::MORPHOLOGY_OP_CLOSE;
  if (text == "gradient") return v1::MORPHOLOGY_OP_GRADIENT;
  if (text == "tophat") return v1::MORPHOLOGY_OP_TOP_HAT;
  if (text == "blackhat") return v1::MORPHOLOGY_OP_BLACK_HAT;
  return absl::InvalidArgumentError(absl::StrCat(
      "op '", text, "': expected erode, dilate, open, close, gradient, tophat or blackhat"));
}

absl::StatusOr<v1::ElementShape> ParseShape(absl::string_view text) {
  if (text == "rect" || text == "box") return v1::ELEMENT_SHAPE_RECT;
  if (text == "ellipse" || text == "disk" || text == "ball") return v1::ELEMENT_SHAPE_ELLIPSE;
  if (text == "cross") return v1::ELEMENT_SHAPE_CROSS;
  if (text == "custom") return v1::ELEMENT_SHAPE_CUSTOM;
  return absl::InvalidArgumentError(
      absl::StrCat("shape '", text, "': expected rect, ellipse, cross or custom"));
}

absl::StatusOr<v1::MorphologyStep> ParseStep(absl::string_view text) {
  const std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  if (parts.size() < 3 || parts.size() > 4) {
    return absl::InvalidArgumentError(absl::StrCat("step '", text,
                                                   "': expected op:shape:WxH[xD][:iterations] or "
                                                   "op:shape:Rmm[:iterations]"));
  }
  v1::MorphologyStep step;
  CUIMG_ASSIGN_OR_RETURN(v1::MorphologyOp op, ParseOp(parts[0]));
  CUIMG_ASSIGN_OR_RETURN(v1::ElementShape shape, ParseShape(parts[1]));
  step.set_op(op);
  step.mutable_element()->set_shape(shape);
  absl::StatusOr<v1::ElementRadius> radius = ParseRadius(parts[2]);
  if (radius.ok()) {
    *step.mutable_element()->mutable_radius() = *radius;
  } else if (radius.status().code() != absl::StatusCode::kNotFound) {
    return radius.status();
  } else {
    CUIMG_ASSIGN_OR_RETURN(auto size, ParseSize(parts[2]));
    step.mutable_element()->set_width(size[0]);
    step.mutable_element()->set_height(size[1]);
    step.mutable_element()->set_depth(size[2]);
  }
  if (parts.size() == 4) {
    int iterations = 0;
    if (!absl::SimpleAtoi(parts[3], &iterations) || iterations < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("step '", text, "': iterations '", parts[3], "' is not >= 1"));
    }
    step.set_iterations(iterations);
  }
  return step;
}

absl::StatusOr<std::vector<v1::MorphologyStep>> ParseSteps(absl::string_view text) {
  std::vector<v1::MorphologyStep> steps;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    CUIMG_ASSIGN_OR_RETURN(v1::MorphologyStep step, ParseStep(part));
    steps.push_back(std::move(step));
  }
  if (steps.empty()) return absl::InvalidArgumentError("steps: empty");
  return steps;
}

}  // namespace cuimg
