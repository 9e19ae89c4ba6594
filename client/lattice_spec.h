// Lattices for `cuimg deform`: the mesh's bounding box (or a JSON file) with displacements from
// simple shape controls (twist, bulge) or listed per control point.
#ifndef CUIMG_CLIENT_LATTICE_SPEC_H_
#define CUIMG_CLIENT_LATTICE_SPEC_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cuimg/kernels/mesh.h"
#include "cuimg/v1/deform.pb.h"

namespace cuimg {

struct LatticeControls {
  std::string counts = "3x3x3";  // control points per axis, each in [2, 9]
  double twist_degrees = 0;      // rotation about the lattice's u axis, -t/2 .. +t/2 along it
  double bulge = 0;              // middle of the lattice pushed out by this fraction
};

// The axis-aligned bounding box of `mesh`, padded by 1%, as a lattice with the controls applied.
absl::StatusOr<Lattice> LatticeAroundMesh(const Mesh& mesh, const LatticeControls& controls);
// A lattice from a JSON file: {"origin":[x,y,z], "s":[..], "t":[..], "u":[..],
// "counts":[cs,ct,cu], "displacements":[3 * cs * ct * cu numbers]}.
absl::StatusOr<Lattice> LatticeFromJsonFile(const std::string& path);
// The same from the JSON text; `name` labels errors.
absl::StatusOr<Lattice> LatticeFromJson(absl::string_view text, const std::string& name);
void ToProtoLattice(const Lattice& lattice, v1::Lattice* out);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_LATTICE_SPEC_H_
