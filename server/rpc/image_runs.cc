// The image RPCs' and Deform's work, once admitted (ImagingService::Serve): resolve the input,
// run the backend, deliver the results (returned beside the response's bytes, kept resident, or
// written to shared memory).
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/group_rectangles.h"
#include "server/rpc/frame_output.h"
#include "server/rpc/image_input.h"
#include "server/rpc/imaging_service.h"
#include "server/rpc/result_slot.h"
#include "server/rpc/wire_pixels.h"
#include "server/scheduling/work_estimate.h"
#include "server/validation/proto_conversion.h"

namespace cuimg {

absl::StatusOr<absl::optional<ResolvedImage>> ImagingService::ResolveExtraImage(
    const absl::optional<ImageInput>& input, CallScope& call) {
  if (!input.has_value()) return absl::optional<ResolvedImage>();
  // Decoded on the host: on the GPU it could land on another device than the main input.
  const double input_decode_us = call.times().decode_us;
  call.times().decode_us = 0;  // set by ResolveImage for an encoded file only
  absl::StatusOr<ResolvedImage> resolved =
      ResolveImage(*input, call, *store_, shared_memory_.get(), options_.limits,
                   ImageDecoders{decoders_.threads, nullptr});
  call.times().decode_us += input_decode_us;
  if (!resolved.ok()) return resolved.status();
  return absl::optional<ResolvedImage>(*std::move(resolved));
}

absl::Status ImagingService::RunMorphology(const MorphologyJob& job, CallScope& call,
                                           v1::MorphologyResponse* response) {
  const std::string& identity = call.identity();
  CUIMG_ASSIGN_OR_RETURN(
      ResolvedImage in,
      ResolveImage(job.input, call, *store_, shared_memory_.get(), options_.limits, decoders_));
  CUIMG_RETURN_IF_ERROR(CheckMorphologyInput(in.view, job));
  CUIMG_ASSIGN_OR_RETURN(absl::optional<ResolvedImage> marker, ResolveExtraImage(job.marker, call));
  if (marker.has_value()) CUIMG_RETURN_IF_ERROR(CheckMarkerShape(marker->view, in.view, "marker"));
  const ImageView* marker_view = marker.has_value() ? &marker->view : nullptr;
  CUIMG_RETURN_IF_ERROR(call.CheckAlive());
  for (const v1::StructuringElement& e : job.resolved_elements) {
    *response->add_resolved_elements() = e;
  }
  if (!job.output.shared_memory_region.empty()) {
    return MorphologyIntoSharedMemory(job, in, marker.has_value() ? &*marker : nullptr, call,
                                      response);
  }
  if (job.output.frame_encoding != FrameSyntax::kNative) {
    // Into a host image, then encoded slice by slice into the response's frames.
    Image result(in.view.type, in.view.extent, 1, Image::kUninitialized);
    CUIMG_RETURN_IF_ERROR(backend_->Morphology(in.input(), result.view(), job.steps, marker_view,
                                               &call.times(), call.cancel()));
    metrics_->AddPixels("Morphology", in.view.extent.Pixels());
    CUIMG_RETURN_IF_ERROR(call.CheckAlive());
    DescribeResult(result.type(), result.extent(), in.spacing, response->mutable_result());
    return EncodeResultFrames(result.view(), in.spacing, job.output.frame_encoding, decoders_,
                              response->mutable_result()->mutable_dicom_frames());
  }
  // A unary volume's result then needs no second buffer (issue #34's peak memory).
  const void* overwrite = backend_->MorphologyWritesOverInput() ? in.view.data : nullptr;
  ResultSlot result(job.output, in.view.type, in.view.extent, in.spacing,
                    response->mutable_result(), *call.detached_results(), overwrite);
  const ImageView out{in.view.type, in.view.extent, 1, result.data()};
  CUIMG_RETURN_IF_ERROR(
      backend_->Morphology(in.input(), out, job.steps, marker_view, &call.times(), call.cancel()));
  metrics_->AddPixels("Morphology", in.view.extent.Pixels());
  return result.Deliver(*store_, identity);
}

absl::Status ImagingService::MorphologyIntoSharedMemory(const MorphologyJob& job,
                                                        const ResolvedImage& in,
                                                        const ResolvedImage* marker,
                                                        CallScope& call,
                                                        v1::MorphologyResponse* response) {
  CUIMG_ASSIGN_OR_RETURN(std::shared_ptr<const SharedMemoryRegion> region,
                         FindRegion(shared_memory_.get(), call, job.output.shared_memory_region,
                                    "output.shared_memory.region"));
  const std::size_t bytes = in.view.Bytes();
  CUIMG_ASSIGN_OR_RETURN(std::uint8_t * data, region->Span(job.output.shared_memory_offset, bytes,
                                                           "output.shared_memory.offset"));
  // The kernels read the input while writing the output: the two must not share bytes of the
  // object (wherever it is mapped).
  if (in.region != nullptr && SharedBytesOverlap(*in.region, job.input.offset, bytes, *region,
                                                 job.output.shared_memory_offset, bytes)) {
    return InvalidFieldError(ErrorReason::kInvalidCombination, "output.shared_memory.offset",
                             "the result's bytes overlap the input's");
  }
  if (marker != nullptr && marker->region != nullptr &&
      SharedBytesOverlap(*marker->region, job.marker->offset, bytes, *region,
                         job.output.shared_memory_offset, bytes)) {
    return InvalidFieldError(ErrorReason::kInvalidCombination, "output.shared_memory.offset",
                             "the result's bytes overlap the marker's");
  }
  const ImageView out{in.view.type, in.view.extent, 1, data};
  CUIMG_RETURN_IF_ERROR(backend_->Morphology(in.input(), out, job.steps,
                                             marker != nullptr ? &marker->view : nullptr,
                                             &call.times(), call.cancel()));
  metrics_->AddPixels("Morphology", in.view.extent.Pixels());
  v1::Image* image = response->mutable_result()->mutable_image();
  SetImageHeader(out, image);
  *image->mutable_spacing() = in.spacing;
  return absl::OkStatus();
}

absl::Status ImagingService::RunGradient(const GradientJob& job, CallScope& call,
                                         v1::GradientResponse* response) {
  const std::string& identity = call.identity();
  CUIMG_ASSIGN_OR_RETURN(
      ResolvedImage in,
      ResolveImage(job.input, call, *store_, shared_memory_.get(), options_.limits, decoders_));
  CUIMG_RETURN_IF_ERROR(CheckGradientInput(in.view, job));
  CUIMG_RETURN_IF_ERROR(call.CheckAlive());
  const Extent& e = in.view.extent;
  DetachedResults& detached = *call.detached_results();
  ResultSlot gx(job.output, PixelType::kF32, e, in.spacing, response->mutable_gx(), detached);
  ResultSlot gy(job.output, PixelType::kF32, e, in.spacing, response->mutable_gy(), detached);
  std::unique_ptr<ResultSlot> magnitude;
  std::unique_ptr<ResultSlot> angle;
  if (job.spec.magnitude) {
    magnitude = std::make_unique<ResultSlot>(job.output, PixelType::kF32, e, in.spacing,
                                             response->mutable_magnitude(), detached);
  }
  if (job.spec.angle) {
    angle = std::make_unique<ResultSlot>(job.output, PixelType::kF32, e, in.spacing,
                                         response->mutable_angle(), detached);
  }
  GradientOutputs out;
  out.gx = static_cast<float*>(gx.data());
  out.gy = static_cast<float*>(gy.data());
  out.magnitude = magnitude ? static_cast<float*>(magnitude->data()) : nullptr;
  out.angle = angle ? static_cast<float*>(angle->data()) : nullptr;
  CUIMG_RETURN_IF_ERROR(
      backend_->Gradient(in.input(), job.spec, out, &call.times(), call.cancel()));
  CUIMG_ASSIGN_OR_RETURN(GradientTaps taps, ComputeGradientTaps(job.spec));
  for (double t : taps.smoothing) response->add_smoothing_taps(static_cast<float>(t));
  for (double t : taps.derivative) response->add_derivative_taps(static_cast<float>(t));
  metrics_->AddPixels("Gradient", e.Pixels());
  CUIMG_RETURN_IF_ERROR(gx.Deliver(*store_, identity));
  CUIMG_RETURN_IF_ERROR(gy.Deliver(*store_, identity));
  if (magnitude) CUIMG_RETURN_IF_ERROR(magnitude->Deliver(*store_, identity));
  if (angle) CUIMG_RETURN_IF_ERROR(angle->Deliver(*store_, identity));
  return absl::OkStatus();
}

absl::Status ImagingService::RunPyramid(const PyramidJob& job_in, CallScope& call,
                                        v1::PyramidResponse* response) {
  PyramidJob job = job_in;
  const std::string& identity = call.identity();
  CUIMG_ASSIGN_OR_RETURN(
      ResolvedImage in,
      ResolveImage(job.input, call, *store_, shared_memory_.get(), options_.limits, decoders_));
  CUIMG_RETURN_IF_ERROR(CheckPyramidInput(in.view, &job));
  CUIMG_RETURN_IF_ERROR(call.CheckAlive());
  CUIMG_ASSIGN_OR_RETURN(std::vector<PyramidLevel> levels,
                         PlanPyramidLevels(in.view.type, in.view.extent, job.spec));
  // The backend writes the packed levels once: into pieces that gRPC sends level by level when
  // they are only returned (each piece one pinned buffer where the pool has one), else into one
  // buffer that the resident copies are taken from.
  DetachedResults& detached = *call.detached_results();
  const bool only_returned = !job.output.keep_resident;
  std::vector<PackedPiece> pieces;
  std::vector<std::shared_ptr<HostBuffer>> buffers;
  std::vector<std::uint8_t> packed;
  if (only_returned) {
    pieces = GroupPyramidLevels(levels, options_.pinned_message_max_bytes);
    for (PackedPiece& piece : pieces) {
      buffers.push_back(detached.Allocate(piece.bytes));
      piece.data = buffers.back()->data();
    }
  } else {
    packed.resize(PyramidOutputBytes(levels));
    pieces.push_back(PackedPiece{0, packed.size(), packed.data()});
  }
  CUIMG_RETURN_IF_ERROR(
      backend_->Pyramid(in.input(), job.spec, pieces, &call.times(), call.cancel()));
  std::size_t piece = 0;
  for (const PyramidLevel& level : levels) {
    v1::PyramidLevel* out = response->add_levels();
    out->set_index(static_cast<std::uint32_t>(level.index));
    out->set_scale(level.scale);
    out->set_width(static_cast<std::uint32_t>(level.width));
    out->set_height(static_cast<std::uint32_t>(level.height));
    const Extent extent{level.width, level.height, 1};
    if (only_returned) {
      while (level.offset_bytes >= pieces[piece].offset + pieces[piece].bytes) ++piece;
      DescribeResult(job.spec.output_type, extent, in.spacing, out->mutable_result());
      detached.Attach(out->mutable_result(), buffers[piece],
                      level.offset_bytes - pieces[piece].offset, level.bytes);
      continue;
    }
    ResultSlot slot(job.output, job.spec.output_type, extent, in.spacing, out->mutable_result(),
                    detached);
    std::memcpy(slot.data(), packed.data() + level.offset_bytes, level.bytes);
    CUIMG_RETURN_IF_ERROR(slot.Deliver(*store_, identity));
  }
  metrics_->AddPixels("Pyramid", in.view.extent.Pixels());
  return absl::OkStatus();
}

absl::Status ImagingService::RunDetect(const DetectJob& job, CallScope& call,
                                       v1::DetectPedestriansResponse* response) {
  const HogModel& model = *job.model;
  const DetectSpec& spec = job.spec;
  CUIMG_ASSIGN_OR_RETURN(
      ResolvedImage in,
      ResolveImage(job.input, call, *store_, shared_memory_.get(), options_.limits, decoders_));
  CUIMG_RETURN_IF_ERROR(CheckDetectInput(in.view, job));
  CUIMG_RETURN_IF_ERROR(call.CheckAlive());
  CUIMG_ASSIGN_OR_RETURN(
      DetectResult result,
      backend_->DetectPedestrians(in.input(), model, spec, &call.times(), call.cancel()));
  CUIMG_RETURN_IF_ERROR(CheckGroupedHits(result.hits.size(), spec, options_.max_grouped_hits));
  for (const Detection& d : FinishDetections(result.geometry, std::move(result.hits), spec)) {
    v1::Detection* out = response->add_detections();
    out->set_x(d.x);
    out->set_y(d.y);
    out->set_width(d.width);
    out->set_height(d.height);
    out->set_score(d.score);
    out->set_scale(d.scale);
  }
  response->set_levels(static_cast<std::uint32_t>(result.geometry.levels.size()));
  response->set_windows(static_cast<std::uint64_t>(result.geometry.windows));
  response->set_model(model.name);
  metrics_->AddPixels("DetectPedestrians", in.view.extent.Pixels());
  return absl::OkStatus();
}

absl::Status ImagingService::RunDeform(const DeformJob& job, CallScope& call,
                                       v1::DeformResponse* response) {
  const std::string& identity = call.identity();
  std::shared_ptr<const BackendMesh> mesh;
  if (job.mesh.kind == MeshInput::Kind::kHandle) {
    absl::StatusOr<std::shared_ptr<const BackendMesh>> found =
        store_->GetMesh(identity, job.mesh.handle);
    if (!found.ok()) return AtField(found.status(), "mesh.handle");
    mesh = *std::move(found);
  } else {
    CUIMG_ASSIGN_OR_RETURN(mesh, backend_->UploadMesh(job.mesh.view, &call.times()));
  }
  CUIMG_RETURN_IF_ERROR(call.CheckAlive());
  const std::size_t floats = mesh->vertex_count() * 3;
  // Positions and normals go beside the response's bytes (wire_pixels.h).
  auto output = [&](int field) {
    return static_cast<float*>(
        call.detached_results()->AddBytes(response, field, floats * sizeof(float)));
  };
  float* positions = nullptr;
  float* normals = nullptr;
  if (!job.output.omit_data) {
    if (WantsPositions(job.outputs)) {
      positions = output(v1::DeformResponse::kPositionsFieldNumber);
    }
    if (WantsNormals(job.outputs)) {
      normals = output(v1::DeformResponse::kNormalsFieldNumber);
    }
  }
  std::shared_ptr<const BackendMesh> kept;
  CUIMG_RETURN_IF_ERROR(backend_->Deform(*mesh, job.lattice, job.outputs, positions, normals,
                                         job.output.keep_resident ? &kept : nullptr, &call.times(),
                                         call.cancel()));
  response->set_vertex_count(static_cast<std::uint32_t>(mesh->vertex_count()));
  metrics_->AddPixels("Deform", static_cast<std::int64_t>(mesh->vertex_count()));
  if (kept != nullptr) {
    CUIMG_RETURN_IF_ERROR(CheckKeptMesh(*kept, positions));
    absl::StatusOr<ResidentInfo> info = store_->PutMesh(identity, kept, job.output.ttl_seconds);
    if (!info.ok()) return KeptResultError(info.status());
    response->set_handle(info->handle);
  }
  return absl::OkStatus();
}

absl::Status ImagingService::CheckKeptMesh(const BackendMesh& kept, const float* positions) {
  // A resident mesh must pass what an uploaded one passes (ValidateMesh): huge but finite
  // displacements can carry positions past the float range. The returned positions are the kept
  // ones when the call asked for them (the triangles are the source mesh's, valid already);
  // otherwise the kept mesh is read back.
  absl::Status valid;
  if (positions != nullptr) {
    valid = ValidateMesh(MeshView{positions, kept.vertex_count(), nullptr, 0}, "deformed mesh");
  } else {
    CUIMG_ASSIGN_OR_RETURN(Mesh host, backend_->DownloadMesh(kept));
    valid = ValidateMesh(host, "deformed mesh");
  }
  if (valid.ok()) return valid;
  // The deformed mesh is no request field: the request asked to keep what cannot be kept.
  return InvalidFieldError(
      ErrorReason::kValueOutOfRange, "output.keep_resident",
      absl::StrCat("the lattice moves the mesh out of the float range, so it cannot be kept "
                   "resident: ",
                   valid.message()));
}

}  // namespace cuimg
