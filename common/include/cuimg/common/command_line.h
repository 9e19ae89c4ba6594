// --help, --helpfull and --version for cuimg-server and cuimg. Abseil's own handling (Debian's
// 20220623) lists only flags defined in a file named after the binary ("No flags matched." for
// ours), exits 1 after any help, and its --version reports how Abseil itself was compiled.
#ifndef CUIMG_COMMON_COMMAND_LINE_H_
#define CUIMG_COMMON_COMMAND_LINE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace cuimg {

enum class UsageRequest { kNone, kHelp, kHelpFull, kVersion };

// The usage flag on the command line, if any (--help, -help, --helpshort and --helppackage are
// kHelp). Arguments after "--" are not flags.
UsageRequest FindUsageRequest(int argc, char** argv);

// The first argument before "--" that is one of `names`, or "" (a subcommand among flags).
std::string FindArgument(int argc, char** argv, const std::vector<std::string>& names);

// "<program> <version>", then the commit and build type, one per line.
std::string VersionText(absl::string_view program);
// The source commit the build was made from, as --version says it (12 hex digits, "-dirty" when
// the tree had changes; "unknown" without git): cmake/WriteBuildCommit.cmake.
std::string BuildCommit();

// One entry per flag, sorted by name: "  --name (default: value)" and the help text indented
// below it. FlagsDefinedIn takes the __FILE__ of the file that defines them.
std::string DescribeFlags(const std::vector<std::string>& names);
std::string DescribeFlagsDefinedIn(absl::string_view file);
// Every flag the binary links (Abseil's own, such as --flagfile, too), grouped by defining file.
std::string DescribeAllFlags();

}  // namespace cuimg

#endif  // CUIMG_COMMON_COMMAND_LINE_H_
