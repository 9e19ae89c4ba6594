// The flags each cuimg subcommand reads (what client/main.cc passes on), for
// `cuimg <subcommand> --help`. Every flag main.cc defines is in at least one list
// (tests/e2e/test_command_line.py checks).
#ifndef CUIMG_CLIENT_SUBCOMMAND_FLAGS_H_
#define CUIMG_CLIENT_SUBCOMMAND_FLAGS_H_

#include <string>
#include <utility>
#include <vector>

namespace cuimg {

// The connection flags (target, TLS, token, ...) that every subcommand but mesh takes.
const std::vector<std::string>& ConnectionFlagNames();

// (subcommand, the names of its own flags), in the order `cuimg --help` lists the subcommands.
const std::vector<std::pair<std::string, std::vector<std::string>>>& SubcommandFlagNames();

}  // namespace cuimg

#endif  // CUIMG_CLIENT_SUBCOMMAND_FLAGS_H_
