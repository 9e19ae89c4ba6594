#include "cuimg/kernels/hog_model_file.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cuimg/common/status_macros.h"

namespace cuimg {
namespace {

constexpr char kMagic[] = "cuimg-hog-svm";

struct Line {
  int number;
  absl::string_view text;  // stripped
};

absl::Status LineError(int line, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("line ", line, ": ", message));
}

// The value after `key` on `line`, or an error naming the expected key.
absl::StatusOr<absl::string_view> Value(const Line& line, absl::string_view key) {
  const std::pair<absl::string_view, absl::string_view> kv =
      absl::StrSplit(line.text, absl::MaxSplits(absl::ByAnyChar(" \t"), 1));
  if (kv.first != key) {
    return LineError(line.number, absl::StrCat("expected '", key, "', found '", kv.first, "'"));
  }
  return absl::StripAsciiWhitespace(kv.second);
}

absl::StatusOr<float> ParseFloat(absl::string_view token, int line, absl::string_view what) {
  float v = 0;
  if (!absl::SimpleAtof(token, &v) || !std::isfinite(v)) {
    return LineError(line, absl::StrCat(what, ": '", token, "' is not a finite number"));
  }
  return v;
}

}  // namespace

absl::StatusOr<HogModel> ParseHogModel(absl::string_view text, absl::string_view name) {
  std::vector<Line> lines;
  int number = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++number;
    const absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line[0] == '#') continue;
    lines.push_back(Line{number, line});
  }
  constexpr int kHeaderLines = 6;
  if (static_cast<int>(lines.size()) < kHeaderLines) {
    return LineError(number,
                     "unexpected end of file (needs cuimg-hog-svm, window, "
                     "gamma_correction, description, bias, weights)");
  }
  HogModel model;
  model.name = std::string(name);
  CUIMG_ASSIGN_OR_RETURN(absl::string_view version, Value(lines[0], kMagic));
  if (version != "1") {
    return LineError(lines[0].number, absl::StrCat("unsupported version '", version, "'"));
  }
  CUIMG_ASSIGN_OR_RETURN(absl::string_view window, Value(lines[1], "window"));
  const std::vector<absl::string_view> sides =
      absl::StrSplit(window, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (sides.size() != 2 || !absl::SimpleAtoi(sides[0], &model.window_width) ||
      !absl::SimpleAtoi(sides[1], &model.window_height)) {
    return LineError(lines[1].number, "window: expected two integers, width and height");
  }
  CUIMG_ASSIGN_OR_RETURN(absl::string_view gamma, Value(lines[2], "gamma_correction"));
  if (gamma != "0" && gamma != "1") {
    return LineError(lines[2].number, "gamma_correction: expected 0 or 1");
  }
  model.gamma_correction = gamma == "1";
  CUIMG_ASSIGN_OR_RETURN(absl::string_view description, Value(lines[3], "description"));
  model.description = std::string(description);
  CUIMG_ASSIGN_OR_RETURN(absl::string_view bias, Value(lines[4], "bias"));
  CUIMG_ASSIGN_OR_RETURN(model.bias, ParseFloat(bias, lines[4].number, "bias"));
  CUIMG_ASSIGN_OR_RETURN(absl::string_view count_text, Value(lines[5], "weights"));
  int count = 0;
  if (!absl::SimpleAtoi(count_text, &count) || count < 1) {
    return LineError(lines[5].number, "weights: expected a positive count");
  }
  model.weights.reserve(count);
  for (std::size_t i = kHeaderLines; i < lines.size(); ++i) {
    for (absl::string_view token :
         absl::StrSplit(lines[i].text, absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
      if (static_cast<int>(model.weights.size()) == count) {
        return LineError(lines[i].number,
                         absl::StrCat("more than the ", count, " weights announced"));
      }
      CUIMG_ASSIGN_OR_RETURN(
          float w,
          ParseFloat(token, lines[i].number, absl::StrCat("weights[", model.weights.size(), "]")));
      model.weights.push_back(w);
    }
  }
  if (static_cast<int>(model.weights.size()) != count) {
    return LineError(
        number, absl::StrCat("found ", model.weights.size(), " weights, ", count, " announced"));
  }
  CUIMG_RETURN_IF_ERROR(ValidateHogModel(model));
  return model;
}

absl::StatusOr<HogModel> ReadHogModelFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot be read"));
  std::ostringstream text;
  text << in.rdbuf();
  std::string name = path.substr(path.find_last_of('/') + 1);
  const std::size_t ext = std::string(kHogModelExtension).size();
  if (name.size() > ext && name.compare(name.size() - ext, ext, kHogModelExtension) == 0) {
    name.resize(name.size() - ext);
  }
  absl::StatusOr<HogModel> model = ParseHogModel(text.str(), name);
  if (!model.ok()) {
    return absl::Status(model.status().code(), absl::StrCat(path, ": ", model.status().message()));
  }
  return model;
}

std::string FormatHogModel(const HogModel& model) {
  std::string out = absl::StrCat(
      kMagic, " 1\nwindow ", model.window_width, " ", model.window_height, "\ngamma_correction ",
      model.gamma_correction ? 1 : 0, "\ndescription ", model.description, "\n",
      absl::StrFormat("bias %.9g\n", model.bias), "weights ", model.weights.size(), "\n");
  for (std::size_t i = 0; i < model.weights.size(); ++i) {
    absl::StrAppend(&out, absl::StrFormat("%.9g", model.weights[i]),
                    (i + 1) % 8 == 0 || i + 1 == model.weights.size() ? "\n" : " ");
  }
  return out;
}

}  // namespace cuimg
