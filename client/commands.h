// The client's subcommands. Each takes plain option structs (filled from flags in main.cc) and
// returns the process exit code: 0 ok, 1 RPC error (status printed), 2 usage.
#ifndef CUIMG_CLIENT_COMMANDS_H_
#define CUIMG_CLIENT_COMMANDS_H_

#include <string>

#include "client/connection.h"

namespace cuimg {

struct HealthCommand {
  // "" checks the whole server.
  std::string service;
};
int RunHealth(const ConnectionOptions& connection, const HealthCommand& command);

struct MorphologyCommand {
  std::string input;
  std::string output;
  // A chain "op:shape:WxH[xD][:iterations],..."; when empty, one step from the fields below.
  std::string steps;
  std::string op = "dilate";
  std::string shape = "rect";
  std::string size = "3x3";
  // "x,y" or "x,y,z"; empty means the centre.
  std::string anchor;
  int iterations = 1;
  std::string border = "neutral";
  double border_value = 0;
  // A PNG whose non-zero pixels form a custom element (shape "custom").
  std::string mask;
  bool json = false;
};
int RunMorphology(const ConnectionOptions& connection, const MorphologyCommand& command);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_COMMANDS_H_
