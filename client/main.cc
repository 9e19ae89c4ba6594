// cuimg: the command-line client. `cuimg <subcommand> [flags]`; `cuimg --help` lists every flag.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "client/commands.h"

// Connection (every subcommand).
ABSL_FLAG(std::string, target, "localhost:50051",
          "Server address: host:port, dns:///host:port or unix:///path.");
ABSL_FLAG(double, timeout, 60, "Per-RPC deadline in seconds (0 = none).");
ABSL_FLAG(bool, json, false, "Print results as JSON.");

// health
ABSL_FLAG(std::string, service, "", "health: the service to check (\"\" = whole server).");

// morphology
ABSL_FLAG(std::string, input, "", "morphology: input image (.png, .jpg).");
ABSL_FLAG(std::string, output, "", "morphology: output image (.png, .jpg).");
ABSL_FLAG(std::string, steps, "",
          "morphology: a chain op:shape:WxH[xD][:iterations],... (overrides --op/--shape/--size/"
          "--iterations). ops: erode dilate open close gradient tophat blackhat; shapes: rect "
          "ellipse cross custom.");
ABSL_FLAG(std::string, op, "dilate", "morphology: the operation (see --steps).");
ABSL_FLAG(std::string, shape, "rect", "morphology: structuring element shape (see --steps).");
ABSL_FLAG(std::string, size, "3x3", "morphology: element size WxH (2D) or WxHxD (3D).");
ABSL_FLAG(std::string, anchor, "", "morphology: element anchor x,y[,z] (default: centre).");
ABSL_FLAG(int, iterations, 1, "morphology: repetitions of the operation.");
ABSL_FLAG(std::string, border, "neutral",
          "morphology: neutral (outside pixels never win) or constant (--border_value).");
ABSL_FLAG(double, border_value, 0, "morphology: outside value for --border constant.");
ABSL_FLAG(std::string, mask, "", "morphology: 8-bit PNG mask for --shape custom.");

namespace {

constexpr char kUsage[] =
    "cuimg <subcommand> [flags]\n"
    "subcommands:\n"
    "  health       grpc.health.v1 check; exit 0 when SERVING\n"
    "  morphology   erode/dilate/open/close/gradient/tophat/blackhat an image\n"
    "exit codes: 0 ok, 1 RPC error (status printed), 2 usage\n";

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() != 2) {
    std::fprintf(stderr, "%s", kUsage);
    return cuimg::kExitUsage;
  }
  const std::string subcommand = args[1];
  cuimg::ConnectionOptions connection;
  connection.target = absl::GetFlag(FLAGS_target);
  connection.timeout_seconds = absl::GetFlag(FLAGS_timeout);

  if (subcommand == "health") {
    cuimg::HealthCommand command;
    command.service = absl::GetFlag(FLAGS_service);
    return cuimg::RunHealth(connection, command);
  }
  if (subcommand == "morphology") {
    cuimg::MorphologyCommand command;
    command.input = absl::GetFlag(FLAGS_input);
    command.output = absl::GetFlag(FLAGS_output);
    command.steps = absl::GetFlag(FLAGS_steps);
    command.op = absl::GetFlag(FLAGS_op);
    command.shape = absl::GetFlag(FLAGS_shape);
    command.size = absl::GetFlag(FLAGS_size);
    command.anchor = absl::GetFlag(FLAGS_anchor);
    command.iterations = absl::GetFlag(FLAGS_iterations);
    command.border = absl::GetFlag(FLAGS_border);
    command.border_value = absl::GetFlag(FLAGS_border_value);
    command.mask = absl::GetFlag(FLAGS_mask);
    command.json = absl::GetFlag(FLAGS_json);
    return cuimg::RunMorphology(connection, command);
  }
  std::fprintf(stderr, "unknown subcommand '%s'\n%s", subcommand.c_str(), kUsage);
  return cuimg::kExitUsage;
}
