// Runs the labelling references for label_reference_scipy_test.py, which compares them with
// SciPy. Reads requests from stdin until EOF, one per case; answers each on stdout.
//
// Request: one text line
//   OP TYPE WIDTH HEIGHT DEPTH CONNECTIVITY PARAM LO HI EXTRA_TYPE
// then the input's pixels and, when EXTRA_TYPE is not "-", an image of that type (the intensity
// of "label", the marker of "fill"). OP: label (PARAM = min_voxels; LO HI the threshold, "-" for
// none), remove_small (PARAM = min_voxels), keep_largest, fill (SeededFillSpec: PARAM is a bit
// set, 1 = seed_border, 2 = seed_marker; LO HI the range or "-"; the fill value is the line's
// 11th field, sent with every op). Pixels are raw little-endian, x fastest.
// Answer: "ok N\n" then the output image (label: u32 labels, then N regions of 14 float64s:
// voxels, bbox_begin[3], bbox_end[3], centroid[3], min, max, sum, mean), or "error MESSAGE\n".
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cuimg/reference/label_reference.h"

namespace cuimg {
namespace {

std::optional<PixelType> TypeNamed(const std::string& name) {
  for (PixelType t :
       {PixelType::kU8, PixelType::kU16, PixelType::kI16, PixelType::kU32, PixelType::kF32}) {
    if (PixelTypeName(t) == name) return t;
  }
  return std::nullopt;
}

bool ReadImage(PixelType type, const Extent& e, Image* image) {
  *image = Image(type, e, 1);
  return std::fread(image->bytes(), 1, image->size_bytes(), stdin) == image->size_bytes();
}

void Write(const void* data, std::size_t bytes) { std::fwrite(data, 1, bytes, stdout); }

void Answer(const absl::Status& status, const Image& out, const std::vector<RegionStats>* regions) {
  if (!status.ok()) {
    std::printf("error %s\n", std::string(status.message()).c_str());
    return;
  }
  std::printf("ok %zu\n", regions != nullptr ? regions->size() : 0);
  Write(out.bytes(), out.size_bytes());
  if (regions == nullptr) return;
  for (const RegionStats& r : *regions) {
    const double row[14] = {static_cast<double>(r.voxels),
                            static_cast<double>(r.bbox_begin[0]),
                            static_cast<double>(r.bbox_begin[1]),
                            static_cast<double>(r.bbox_begin[2]),
                            static_cast<double>(r.bbox_end[0]),
                            static_cast<double>(r.bbox_end[1]),
                            static_cast<double>(r.bbox_end[2]),
                            r.centroid[0],
                            r.centroid[1],
                            r.centroid[2],
                            r.min,
                            r.max,
                            r.sum,
                            r.mean};
    Write(row, sizeof row);
  }
}

// One line of stdin without its newline; false at EOF.
bool ReadLine(std::string* line) {
  line->clear();
  for (int c = std::getc(stdin); c != EOF; c = std::getc(stdin)) {
    if (c == '\n') return true;
    line->push_back(static_cast<char>(c));
  }
  return !line->empty();
}

int Main() {
  std::string line;
  while (ReadLine(&line)) {
    std::istringstream fields(line);
    std::string op, type_name, lo, hi, extra_name;
    Extent e;
    int connectivity = 0;
    std::int64_t param = 0;
    double fill = 0;
    fields >> op >> type_name >> e.width >> e.height >> e.depth >> connectivity >> param >> lo >>
        hi >> extra_name >> fill;
    const std::optional<PixelType> type = TypeNamed(type_name);
    const std::optional<PixelType> extra_type = TypeNamed(extra_name);
    Image input;
    Image extra;
    if (!fields || !type.has_value() || !ReadImage(*type, e, &input) ||
        (extra_type.has_value() && !ReadImage(*extra_type, e, &extra))) {
      std::fprintf(stderr, "label_reference_tool: bad request: %s\n", line.c_str());
      return 2;
    }
    std::optional<std::array<double, 2>> range;
    if (lo != "-")
      range =
          std::array<double, 2>{std::strtod(lo.c_str(), nullptr), std::strtod(hi.c_str(), nullptr)};
    const Connectivity c = static_cast<Connectivity>(connectivity);
    const ImageView extra_view = extra.view();
    const ImageView* extra_ptr = extra_type.has_value() ? &extra_view : nullptr;
    Image out(*type, e, 1);
    if (op == "label") {
      LabelSpec spec;
      spec.connectivity = c;
      spec.min_voxels = param;
      spec.threshold = range;
      out = Image(PixelType::kU32, e, 1);
      absl::StatusOr<std::vector<RegionStats>> regions =
          LabelReferenceInto(input.view(), spec, out.view(), extra_ptr);
      Answer(regions.status(), out, regions.ok() ? &*regions : nullptr);
    } else if (op == "remove_small") {
      Answer(RemoveSmallReference(input.view(), out.view(), c, param), out, nullptr);
    } else if (op == "keep_largest") {
      Answer(KeepLargestReference(input.view(), out.view(), c), out, nullptr);
    } else if (op == "fill") {
      SeededFillSpec spec;
      spec.connectivity = c;
      spec.range = range;
      spec.seed_border = (param & 1) != 0;
      spec.seed_marker = (param & 2) != 0;
      spec.fill = fill;
      Answer(FillUnseededComponentsReference(input.view(), extra_ptr, out.view(), spec), out,
             nullptr);
    } else {
      std::fprintf(stderr, "label_reference_tool: unknown op %s\n", op.c_str());
      return 2;
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace cuimg

int main() { return cuimg::Main(); }
