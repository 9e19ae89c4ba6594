// The flags each cuimg subcommand reads (what client/main.cc passes on), for
// `cuimg <subcommand> --help`. Every flag main.cc defines is in at least one list
// (tests/e2e/test_command_line.py checks).
#ifndef CUIMG_CLIENT_SUBCOMMAND_FLAGS_H_
#define CUIMG_CLIENT_SUBCOMMAND_FLAGS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace cuimg {

// The connection flags (target, TLS, token, ...) that every subcommand but mesh takes.
const std::vector<std::string>& ConnectionFlagNames();

// (subcommand, the names of its own flags), in the order `cuimg --help` lists the subcommands.
const std::vector<std::pair<std::string, std::vector<std::string>>>& SubcommandFlagNames();

// Checks the flags in argv[1..] as Abseil's parser will read them (--name=value, --name value for
// a non-boolean flag, --name and --noname for a boolean; arguments after "--" are not flags) and
// parses each value into its flag. INVALID_ARGUMENT naming the first flag that is not defined, has
// no value, or whose value does not parse. main.cc calls it first because Abseil's parser exits
// with status 1 on those, which cuimg's exit codes give to RPC errors (usage is 2). Flags inside a
// --flagfile are left to Abseil.
absl::Status CheckFlags(int argc, char** argv);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_SUBCOMMAND_FLAGS_H_
