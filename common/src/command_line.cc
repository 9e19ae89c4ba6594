#include "cuimg/common/command_line.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace cuimg {

extern const char kBuildCommit[];  // generated at build time (cmake/WriteBuildCommit.cmake)

namespace {

constexpr std::size_t kWidth = 100;

// The flag's name, or "" when `arg` is not a flag ("--name", "-name", "--name=value").
absl::string_view FlagName(absl::string_view arg) {
  if (!absl::ConsumePrefix(&arg, "-")) return "";
  absl::ConsumePrefix(&arg, "-");
  return arg.substr(0, arg.find('='));
}

// `text` wrapped at kWidth, each line indented by six spaces.
std::string Wrap(absl::string_view text) {
  std::string out;
  std::string line;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!line.empty() && 6 + line.size() + 1 + word.size() > kWidth) {
      absl::StrAppend(&out, "      ", line, "\n");
      line.clear();
    }
    absl::StrAppend(&line, line.empty() ? "" : " ", word);
  }
  if (!line.empty()) absl::StrAppend(&out, "      ", line, "\n");
  return out;
}

std::string Describe(const absl::CommandLineFlag& flag) {
  std::string value = flag.DefaultValue();
  if (flag.IsOfType<std::string>()) value = absl::StrCat("\"", value, "\"");
  return absl::StrCat("  --", flag.Name(), " (default: ", value, ")\n", Wrap(flag.Help()));
}

std::vector<const absl::CommandLineFlag*> Sorted(std::vector<const absl::CommandLineFlag*> flags) {
  std::sort(flags.begin(), flags.end(),
            [](const auto* a, const auto* b) { return a->Name() < b->Name(); });
  return flags;
}

}  // namespace

UsageRequest FindUsageRequest(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") break;
    const absl::string_view name = FlagName(arg);
    if (name == "help" || name == "helpshort" || name == "helppackage") return UsageRequest::kHelp;
    if (name == "helpfull") return UsageRequest::kHelpFull;
    if (name == "version") return UsageRequest::kVersion;
  }
  return UsageRequest::kNone;
}

std::string FindArgument(int argc, char** argv, const std::vector<std::string>& names) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (std::find(names.begin(), names.end(), arg) != names.end()) return std::string(arg);
  }
  return "";
}

std::string BuildCommit() { return kBuildCommit; }

std::string VersionText(absl::string_view program) {
  return absl::StrCat(program, " ", CUIMG_VERSION, "\ncommit: ", kBuildCommit,
                      "\nbuild type: ", CUIMG_BUILD_TYPE, "\n");
}

std::string DescribeFlags(const std::vector<std::string>& names) {
  std::vector<const absl::CommandLineFlag*> flags;
  for (const std::string& name : names) {
    if (const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name)) flags.push_back(flag);
  }
  std::string out;
  for (const absl::CommandLineFlag* flag : Sorted(flags)) absl::StrAppend(&out, Describe(*flag));
  return out;
}

std::string DescribeFlagsDefinedIn(absl::string_view file) {
  // Abseil reports a flag's file without leading slashes: an absolute __FILE__ (any build without
  // ccache's relative paths) would otherwise match no flag.
  absl::string_view normalized = file;
  while (absl::ConsumePrefix(&normalized, "/")) {
  }
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (flag->Filename() == file || flag->Filename() == normalized) flags.push_back(flag);
  }
  std::string out;
  for (const absl::CommandLineFlag* flag : Sorted(flags)) absl::StrAppend(&out, Describe(*flag));
  return out;
}

std::string DescribeAllFlags() {
  std::map<std::string, std::vector<const absl::CommandLineFlag*>> by_file;
  for (const auto& [name, flag] : absl::GetAllFlags()) by_file[flag->Filename()].push_back(flag);
  std::string out;
  for (const auto& [file, flags] : by_file) {
    absl::StrAppend(&out, "\nFlags from ", file, ":\n");
    for (const absl::CommandLineFlag* flag : Sorted(flags)) absl::StrAppend(&out, Describe(*flag));
  }
  return out;
}

}  // namespace cuimg
