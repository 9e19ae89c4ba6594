#include "client/subcommand_flags.h"

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace cuimg {
namespace {

const std::vector<std::string> kConnectionFlags = {
    "target",      "timeout",       "lb_policy",    "max_attempts",    "tls",
    "tls_ca_file", "tls_cert_file", "tls_key_file", "tls_server_name", "token_file"};
const std::vector<std::string> kGradientFlags = {"kernel_length", "sigma"};
const std::vector<std::string> kPyramidFlags = {"levels", "ratio", "mode"};
const std::vector<std::string> kDetectFlags = {
    "model",      "hit_threshold", "win_stride", "padding",         "scale",
    "max_levels", "gamma",         "grouping",   "group_threshold", "group_eps"};
const std::vector<std::string> kDeformFlags = {"lattice_file", "lattice_counts", "twist", "bulge"};

std::vector<std::string> Join(std::initializer_list<std::vector<std::string>> lists) {
  std::vector<std::string> out;
  for (const std::vector<std::string>& list : lists) {
    out.insert(out.end(), list.begin(), list.end());
  }
  return out;
}

}  // namespace

const std::vector<std::string>& ConnectionFlagNames() { return kConnectionFlags; }

const std::vector<std::pair<std::string, std::vector<std::string>>>& SubcommandFlagNames() {
  static const auto* table = new std::vector<std::pair<std::string, std::vector<std::string>>>{
      {"health", {"service"}},
      {"morphology",
       {"input",
        "output",
        "steps",
        "op",
        "shape",
        "size",
        "anchor",
        "iterations",
        "border",
        "border_value",
        "mask",
        "marker",
        "nrrd_gzip",
        "json",
        "slab_slices",
        "volume_streams",
        "batch",
        "series_uid",
        "uid_root",
        "output_syntax",
        "send_frames",
        "dicomweb_token_file",
        "dicomweb_user",
        "dicomweb_password_file",
        "dicomweb_ca_file",
        "dicomweb_max_instances",
        "dicomweb_max_bytes"}},
      {"label",
       {"input", "output", "json_out", "connectivity", "threshold", "min_voxels", "intensity",
        "keep_resident", "nrrd_gzip", "series_uid", "json", "send_frames"}},
      {"gradient", Join({kGradientFlags,
                         {"input", "output_prefix", "format", "nrrd_gzip", "series_uid",
                          "send_frames", "slab_slices", "volume_streams"}})},
      {"pyramid", Join({kPyramidFlags, {"input", "output_prefix", "format"}})},
      {"detect",
       Join({kDetectFlags, {"input", "video", "output", "every", "max_frames", "keep_going"}})},
      {"models", {"json"}},
      {"deform", Join({kDeformFlags, {"input", "output", "animate"}})},
      {"mesh", {"n", "m", "output"}},
      {"load",
       Join({{"rpc", "steps"},
             kGradientFlags,
             kPyramidFlags,
             kDetectFlags,
             kDeformFlags,
             {"n",        "m",        "image_size", "pixel_type",     "input",    "concurrency",
              "rate",     "duration", "requests",   "warmup",         "channels", "json",
              "json_out", "csv",      "report",     "progress",       "shm",      "detect_stream",
              "video",    "every",    "max_frames", "server_metrics", "batch"}})},
  };
  return *table;
}

absl::Status CheckFlags(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || !absl::ConsumePrefix(&arg, "-")) continue;  // a positional argument
    absl::ConsumePrefix(&arg, "-");
    const std::size_t equals = arg.find('=');
    const absl::string_view name = arg.substr(0, equals);
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr && absl::StartsWith(name, "no") && equals == absl::string_view::npos) {
      absl::CommandLineFlag* negated = absl::FindCommandLineFlag(name.substr(2));
      if (negated != nullptr && negated->IsOfType<bool>()) continue;
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name, " (cuimg --helpfull lists them)"));
    }
    absl::string_view value;
    if (equals != absl::string_view::npos) {
      value = arg.substr(equals + 1);
    } else if (flag->IsOfType<bool>()) {
      continue;
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
    }
    if (std::string error; !flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, "=", value, ": not a valid value (", error, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace cuimg
