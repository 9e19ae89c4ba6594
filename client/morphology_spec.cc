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
  return absl::InvalidArgumentError(
      absl::StrCat("op '", text,
                   "': expected erode, dilate, open, close, gradient, tophat, blackhat, "
                   "fill_holes, reconstruct_dilate, reconstruct_erode, open_rec, close_rec, "
                   "hmax, hmin, threshold, remove_small or keep_largest"));
}

absl::StatusOr<v1::ElementShape> ParseShape(absl::string_view text) {
  if (text == "rect" || text == "box") return v1::ELEMENT_SHAPE_RECT;
  if (text == "ellipse" || text == "disk" || text == "ball") return v1::ELEMENT_SHAPE_ELLIPSE;
  if (text == "cross") return v1::ELEMENT_SHAPE_CROSS;
  if (text == "custom") return v1::ELEMENT_SHAPE_CUSTOM;
  return absl::InvalidArgumentError(
      absl::StrCat("shape '", text, "': expected rect, ellipse, cross or custom"));
}

namespace {

// "SHAPE" and "WxH[xD]" or a radius in millimetres ("5mm") into `element`.
absl::Status ParseElement(absl::string_view shape_text, absl::string_view size_text,
                          v1::StructuringElement* element) {
  CUIMG_ASSIGN_OR_RETURN(v1::ElementShape shape, ParseShape(shape_text));
  element->set_shape(shape);
  absl::StatusOr<v1::ElementRadius> radius = ParseRadius(size_text);
  if (radius.ok()) {
    *element->mutable_radius() = *radius;
    return absl::OkStatus();
  }
  if (radius.status().code() != absl::StatusCode::kNotFound) return radius.status();
  CUIMG_ASSIGN_OR_RETURN(auto size, ParseSize(size_text));
  element->set_width(size[0]);
  element->set_height(size[1]);
  element->set_depth(size[2]);
  return absl::OkStatus();
}

// The segmentation ops by their names in step strings.
struct SegmentationOp {
  const char* name;
  v1::MorphologyOp op;
};
constexpr SegmentationOp kSegmentationOps[] = {
    {"fill_holes", v1::MORPHOLOGY_OP_FILL_HOLES},
    {"reconstruct_dilate", v1::MORPHOLOGY_OP_RECONSTRUCT_DILATE},
    {"reconstruct_erode", v1::MORPHOLOGY_OP_RECONSTRUCT_ERODE},
    {"open_rec", v1::MORPHOLOGY_OP_OPEN_REC},
    {"close_rec", v1::MORPHOLOGY_OP_CLOSE_REC},
    {"hmax", v1::MORPHOLOGY_OP_HMAX},
    {"hmin", v1::MORPHOLOGY_OP_HMIN},
    {"threshold", v1::MORPHOLOGY_OP_THRESHOLD},
    {"remove_small", v1::MORPHOLOGY_OP_REMOVE_SMALL},
    {"keep_largest", v1::MORPHOLOGY_OP_KEEP_LARGEST},
};

absl::Status StepError(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("step '", text, "': ", why));
}

absl::StatusOr<double> ParseNumber(absl::string_view text, absl::string_view what,
                                   absl::string_view step) {
  double value = 0;
  if (!absl::SimpleAtod(text, &value) || std::isnan(value)) {
    return StepError(step, absl::StrCat(what, " '", text, "' is not a number"));
  }
  return value;
}

// One of kSegmentationOps: "fill_holes[:C]", "open_rec:SHAPE:SIZE[:C]", "hmax:H[:C]",
// "threshold:LO:HI", "remove_small:N[:C]", ...
absl::StatusOr<v1::MorphologyStep> ParseSegmentationStep(
    v1::MorphologyOp op, const std::vector<absl::string_view>& parts, absl::string_view text) {
  v1::MorphologyStep step;
  step.set_op(op);
  std::size_t next = 1;  // the first field after the op's own parameters
  switch (op) {
    case v1::MORPHOLOGY_OP_OPEN_REC:
    case v1::MORPHOLOGY_OP_CLOSE_REC: {
      if (parts.size() < 3) return StepError(text, "expected open_rec:SHAPE:SIZE[:C]");
      CUIMG_RETURN_IF_ERROR(ParseElement(parts[1], parts[2], step.mutable_element()));
      next = 3;
      break;
    }
    case v1::MORPHOLOGY_OP_HMAX:
    case v1::MORPHOLOGY_OP_HMIN: {
      if (parts.size() < 2) return StepError(text, "expected hmax:H[:C] or hmin:H[:C]");
      CUIMG_ASSIGN_OR_RETURN(double h, ParseNumber(parts[1], "H", text));
      step.set_h(h);
      next = 2;
      break;
    }
    case v1::MORPHOLOGY_OP_THRESHOLD: {
      if (parts.size() != 3) return StepError(text, "expected threshold:LO:HI");
      CUIMG_ASSIGN_OR_RETURN(double lo, ParseNumber(parts[1], "LO", text));
      CUIMG_ASSIGN_OR_RETURN(double hi, ParseNumber(parts[2], "HI", text));
      step.set_lo(lo);
      step.set_hi(hi);
      return step;  // thresholds have no connectivity
    }
    case v1::MORPHOLOGY_OP_REMOVE_SMALL: {
      std::uint64_t n = 0;
      if (parts.size() < 2 || !absl::SimpleAtoi(parts[1], &n)) {
        return StepError(text, "expected remove_small:N[:C] (N voxels)");
      }
      step.set_min_voxels(n);
      next = 2;
      break;
    }
    default:
      break;
  }
  if (parts.size() > next + 1) return StepError(text, "too many fields");
  if (parts.size() == next + 1) {
    CUIMG_ASSIGN_OR_RETURN(v1::Connectivity c, ParseConnectivity(parts[next]));
    step.set_connectivity(c);
  }
  return step;
}

}  // namespace

absl::StatusOr<v1::Connectivity> ParseConnectivity(absl::string_view text) {
  if (text == "4") return v1::CONNECTIVITY_4;
  if (text == "8") return v1::CONNECTIVITY_8;
  if (text == "6") return v1::CONNECTIVITY_6;
  if (text == "18") return v1::CONNECTIVITY_18;
  if (text == "26") return v1::CONNECTIVITY_26;
  return absl::InvalidArgumentError(
      absl::StrCat("connectivity '", text, "': expected 4 or 8 (2D), 6, 18 or 26 (3D)"));
}

bool IsGlobalOp(v1::MorphologyOp op) {
  if (op == v1::MORPHOLOGY_OP_THRESHOLD) return false;  // pixel by pixel
  for (const SegmentationOp& s : kSegmentationOps) {
    if (s.op == op) return true;
  }
  return false;
}

absl::StatusOr<v1::MorphologyStep> ParseStep(absl::string_view text) {
  const std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  for (const SegmentationOp& s : kSegmentationOps) {
    if (parts[0] == s.name) return ParseSegmentationStep(s.op, parts, text);
  }
  if (parts.size() < 3 || parts.size() > 4) {
    return absl::InvalidArgumentError(absl::StrCat("step '", text,
                                                   "': expected op:shape:WxH[xD][:iterations] or "
                                                   "op:shape:Rmm[:iterations]"));
  }
  v1::MorphologyStep step;
  CUIMG_ASSIGN_OR_RETURN(v1::MorphologyOp op, ParseOp(parts[0]));
  step.set_op(op);
  CUIMG_RETURN_IF_ERROR(ParseElement(parts[1], parts[2], step.mutable_element()));
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
