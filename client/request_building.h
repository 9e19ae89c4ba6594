// Turning client-side data (images, meshes) into API messages, and response images back. Shared
// by the subcommands and `cuimg load`.
#ifndef CUIMG_CLIENT_REQUEST_BUILDING_H_
#define CUIMG_CLIENT_REQUEST_BUILDING_H_

#include <string>

#include "absl/status/statusor.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/mesh.h"
#include "cuimg/v1/deform.pb.h"
#include "cuimg/v1/types.pb.h"
#include "proto/pixel_type_proto.h"

namespace cuimg {

// The image's header and pixels into `out`.
void ToProtoImage(const Image& image, v1::Image* out);
// The image's header alone (its type, size and channels; not its pixels) into `out`.
void ToProtoImageHeader(const Image& image, v1::Image* out);
// A response image back to an Image; INVALID_ARGUMENT when its byte count does not match.
absl::StatusOr<Image> FromProtoImage(const v1::Image& image);

// "torus:N,M" generates the reference torus; anything else is read as a mesh file.
absl::StatusOr<Mesh> LoadMeshInput(const std::string& input);
void ToProtoMesh(const Mesh& mesh, v1::Mesh* out);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_REQUEST_BUILDING_H_
