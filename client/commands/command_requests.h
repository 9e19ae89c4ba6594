// The parameters of each RPC from its subcommand's options. Shared by the subcommands and
// `cuimg load`, which builds the same requests from the same options.
#ifndef CUIMG_CLIENT_COMMANDS_COMMAND_REQUESTS_H_
#define CUIMG_CLIENT_COMMANDS_COMMAND_REQUESTS_H_

#include "absl/status/statusor.h"
#include "client/commands/commands.h"
#include "cuimg/kernels/mesh.h"
#include "cuimg/v1/detection.pb.h"
#include "cuimg/v1/gradient.pb.h"
#include "cuimg/v1/pyramid.pb.h"

namespace cuimg {

// The command's lattice: its --lattice_file, else one around `mesh` from its controls.
absl::StatusOr<Lattice> DeformLattice(const DeformCommand& command, const Mesh& mesh);

// Each RPC's parameters (the input is set by the caller). INVALID_ARGUMENT naming the flag for a
// value outside its choices.
v1::GradientRequest GradientParameters(const GradientCommand& command);
absl::StatusOr<v1::PyramidRequest> PyramidParameters(const PyramidCommand& command);
absl::StatusOr<v1::DetectPedestriansRequest> DetectParameters(const DetectCommand& command);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_COMMANDS_COMMAND_REQUESTS_H_
