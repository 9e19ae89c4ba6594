// ImagingService: the gRPC face of cuimg. Each handler authorizes (AuthorizeCall), validates
// (server/validation), admits the job to the work queue, runs it on the backend and answers; no
// CUDA here. The handlers and admission are in imaging_service.cc, the admitted image and Deform
// work (Run*) in image_runs.cc, the resident-object RPCs in resident_rpcs.cc,
// ProcessVolumeStream in volume_stream_rpc.cc, DetectStream in detect_stream_rpc.cc, the
// shared-memory RPCs in shared_memory_rpcs.cc.
#ifndef CUIMG_SERVER_IMAGING_SERVICE_H_
#define CUIMG_SERVER_IMAGING_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <atomic>

#include "absl/functional/function_ref.h"
#include "cuimg/codec/decode_threads.h"
#include "cuimg/codec/frame_sandbox.h"
#include "cuimg/v1/imaging_service.grpc.pb.h"
#include "server/backend/backend.h"
#include "server/observability/metrics.h"
#include "server/rpc/call_scope.h"
#include "server/rpc/image_input.h"
#include "server/rpc/live_calls.h"
#include "server/scheduling/work_queue.h"
#include "server/security/authorization.h"
#include "server/server_options.h"
#include "server/state/inflight_budget.h"
#include "server/state/model_registry.h"
#include "server/state/resident_store.h"
#include "server/state/shared_memory_registry.h"
#include "server/state/upload_quota.h"
#include "server/validation/batch_validation.h"
#include "server/validation/request_validation.h"

namespace cuimg {

// The image RPCs and Deform take their messages as bytes, to keep the pixels out of protobuf's
// copies (wire_pixels.h); the wire format is the generated one's.
class ImagingService final
    : public v1::Imaging::WithRawCallbackMethod_Morphology<v1::Imaging::WithRawCallbackMethod_Label<
          v1::Imaging::WithRawCallbackMethod_Gradient<v1::Imaging::WithRawCallbackMethod_Pyramid<
              v1::Imaging::WithRawCallbackMethod_DetectPedestrians<
                  v1::Imaging::WithRawCallbackMethod_Deform<v1::Imaging::CallbackService>>>>>> {
 public:
  // All pointers must outlive the service.
  ImagingService(const ServerOptions& options, const AuthPolicy& auth, Backend* backend,
                 WorkQueue* queue, InflightBudget* budget, ResidentStore* store,
                 ServerMetrics* metrics, const ModelRegistry* models);

  grpc::ServerUnaryReactor* Morphology(grpc::CallbackServerContext* ctx,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Label(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                  grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Gradient(grpc::CallbackServerContext* ctx,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Pyramid(grpc::CallbackServerContext* ctx,
                                    const grpc::ByteBuffer* request,
                                    grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* DetectPedestrians(grpc::CallbackServerContext* ctx,
                                              const grpc::ByteBuffer* request,
                                              grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* ctx,
                                       const v1::ListModelsRequest* request,
                                       v1::ListModelsResponse* response) override;
  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* ctx,
                                          const v1::GetServerInfoRequest* request,
                                          v1::ServerInfo* response) override;
  grpc::ServerUnaryReactor* Deform(grpc::CallbackServerContext* ctx,
                                   const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) override;
  grpc::ServerReadReactor<v1::UploadRequest>* Upload(grpc::CallbackServerContext* ctx,
                                                     v1::UploadResponse* response) override;
  grpc::ServerWriteReactor<v1::DownloadResponse>* Download(
      grpc::CallbackServerContext* ctx, const v1::DownloadRequest* request) override;
  grpc::ServerUnaryReactor* Release(grpc::CallbackServerContext* ctx,
                                    const v1::ReleaseRequest* request,
                                    v1::ReleaseResponse* response) override;
  grpc::ServerUnaryReactor* ListResident(grpc::CallbackServerContext* ctx,
                                         const v1::ListResidentRequest* request,
                                         v1::ListResidentResponse* response) override;
  grpc::ServerBidiReactor<v1::VolumeStreamRequest, v1::VolumeStreamResponse>* ProcessVolumeStream(
      grpc::CallbackServerContext* ctx) override;
  grpc::ServerUnaryReactor* RegisterSharedMemory(
      grpc::CallbackServerContext* ctx, const v1::RegisterSharedMemoryRequest* request,
      v1::RegisterSharedMemoryResponse* response) override;
  grpc::ServerUnaryReactor* UnregisterSharedMemory(
      grpc::CallbackServerContext* ctx, const v1::UnregisterSharedMemoryRequest* request,
      v1::UnregisterSharedMemoryResponse* response) override;
  grpc::ServerUnaryReactor* ListSharedMemory(grpc::CallbackServerContext* ctx,
                                             const v1::ListSharedMemoryRequest* request,
                                             v1::ListSharedMemoryResponse* response) override;

  grpc::ServerBidiReactor<v1::DetectFrame, v1::DetectFrameResult>* DetectStream(
      grpc::CallbackServerContext* ctx) override;

  // DetectPedestrians' steps, which DetectStream's frames (detect_stream_rpc.cc) go through as a
  // unary call does. ValidateDetect: ValidateDetectRequest with this server's models (an unknown
  // model is NOT_FOUND naming `model`). AdmitDetect: the steps between validation and the work
  // queue (Admit). RunDetect: resolves the input and detects, filling `response`; times go to
  // `call`.
  absl::StatusOr<DetectJob> ValidateDetect(const v1::DetectPedestriansRequest& request,
                                           const RequestLimits& limits,
                                           DetachedPixels pixels) const;
  absl::StatusOr<InflightBudget::Reservation> AdmitDetect(
      const grpc::ServerContextBase& ctx, DetectJob* job,
      const v1::DetectPedestriansRequest& request, const std::string& identity,
      std::uint64_t extra_bytes);
  absl::Status RunDetect(const DetectJob& job, CallScope& call,
                         v1::DetectPedestriansResponse* response);
  // The same for a frame that carries a batch (`inputs`, types.proto): ValidateBatch and
  // RunBatch below, and AdmitDetectBatch, AdmitBatch's steps for it.
  absl::StatusOr<InflightBudget::Reservation> AdmitDetectBatch(
      const grpc::ServerContextBase& ctx, BatchJob<DetectJob>* batch,
      const v1::DetectPedestriansRequest& request, const std::string& identity,
      std::uint64_t extra_bytes);

  // Batches (types.proto). ValidateBatch: the request's entries (batch_validation.h). RunBatch
  // (batch_runs.cc): each admitted entry's work, entries of one shape and type together where
  // the operation allows, each entry's outcome in its result; the call fails only when it is
  // cancelled or out of time.
  absl::StatusOr<BatchJob<MorphologyJob>> ValidateBatch(
      const v1::MorphologyRequest& request, absl::Span<const DetachedPixels> pixels) const;
  absl::StatusOr<BatchJob<GradientJob>> ValidateBatch(
      const v1::GradientRequest& request, absl::Span<const DetachedPixels> pixels) const;
  absl::StatusOr<BatchJob<PyramidJob>> ValidateBatch(const v1::PyramidRequest& request,
                                                     absl::Span<const DetachedPixels> pixels) const;
  absl::StatusOr<BatchJob<DetectJob>> ValidateBatch(const v1::DetectPedestriansRequest& request,
                                                    absl::Span<const DetachedPixels> pixels) const;
  absl::Status RunBatch(const BatchJob<MorphologyJob>& batch, CallScope& call,
                        v1::MorphologyResponse* response);
  absl::Status RunBatch(const BatchJob<GradientJob>& batch, CallScope& call,
                        v1::GradientResponse* response);
  absl::Status RunBatch(const BatchJob<PyramidJob>& batch, CallScope& call,
                        v1::PyramidResponse* response);
  absl::Status RunBatch(const BatchJob<DetectJob>& batch, CallScope& call,
                        v1::DetectPedestriansResponse* response);

  const ServerOptions& options() const { return options_; }
  // Null unless options.shared_memory.enabled.
  SharedMemoryRegistry* shared_memory() { return shared_memory_.get(); }
  ResidentStore& store() { return *store_; }
  ServerMetrics& metrics() { return *metrics_; }
  Backend& backend() { return *backend_; }
  InflightBudget& budget() { return *budget_; }
  // What each identity's open uploads may claim (ServerOptions' upload fields).
  UploadQuota& uploads() { return *uploads_; }
  // Every handler's first step: Authorize (authorization.h) the call for `rights` under this
  // server's policy, then let it in among the live calls (UNAVAILABLE once shutdown drains them).
  // OK: the call's identity and hold are set. A refusal is returned for the handler to finish the
  // call with (CallScope::Complete records it, as every error).
  absl::Status AuthorizeCall(CallScope& call, unsigned rights);
  // The calls let in and not yet done with, which shutdown drains before gRPC's own.
  LiveCalls& live_calls() { return live_calls_; }
  // Makes every request's work stop at its next check (UNAVAILABLE), and any request queued or
  // admitted later fail before it runs: for shutdown once the grace period is over. Thread-safe.
  void HardStop() { hard_stop_.store(true, std::memory_order_relaxed); }
  // The flag HardStop sets, for the calls' cancel tokens (cancel_token.h).
  const std::atomic<bool>* hard_stop() const { return &hard_stop_; }

 private:
  // The life of a unary call: authenticate, parse, validate, authorize, admit (bytes, then the
  // work queue), run, answer (with metrics and the timing trailer). `Messages` is how the call's
  // messages are parsed and serialized (call_messages.h: pixels detached or not); `validate`
  // is called as Messages::Validate calls it.
  template <typename Messages, typename Validate, typename Job>
  grpc::ServerUnaryReactor* Serve(
      absl::string_view rpc, grpc::CallbackServerContext* ctx, std::shared_ptr<Messages> messages,
      Validate validate,
      absl::Status (ImagingService::*run)(const Job&, CallScope&, typename Messages::Response*));

  // Once a call is admitted: its work queued, run by `run` (job, call, response) on a worker,
  // the response serialized and the call finished; refused when the queue will not take it.
  template <typename Messages, typename Job, typename Run>
  grpc::ServerUnaryReactor* Start(grpc::ServerUnaryReactor* reactor,
                                  std::shared_ptr<CallScope> call,
                                  std::shared_ptr<CancelToken> cancel,
                                  std::shared_ptr<Messages> messages,
                                  InflightBudget::Reservation reservation, Job job, Run run);

  // A batch's admission (types.proto), as Admit for every entry together: the resident right
  // once, then each entry completed and priced (an entry whose input cannot be, such as an
  // unknown handle or a corrupt header, fails alone), the inputs' bytes held to
  // --max_batch_bytes, the work of all against --max_request_work, and their bytes and
  // `extra_bytes` in one reservation.
  template <typename Job, typename Request>
  absl::StatusOr<InflightBudget::Reservation> AdmitBatch(
      const grpc::ServerContextBase& ctx, absl::string_view rpc, BatchJob<Job>* batch,
      const Request& request, const std::string& identity, std::uint64_t extra_bytes);
  // Entries `members` of a Morphology or Gradient batch (same type and 2D shape, one channel,
  // host pixels; `inputs`: every entry's resolved image) run as the slices of one volume, each
  // member's result in its entry of `response` (batch_runs.cc). An error is the members' (their
  // responses untouched).
  absl::Status MorphologySlices(const BatchJob<MorphologyJob>& batch,
                                const std::vector<int>& members,
                                const std::vector<ResolvedImage>& inputs, CallScope& call,
                                v1::MorphologyResponse* response);
  absl::Status GradientSlices(const BatchJob<GradientJob>& batch, const std::vector<int>& members,
                              const std::vector<ResolvedImage>& inputs, CallScope& call,
                              v1::GradientResponse* response);

  // A unary call that is answered at once (no queue, no admission): AuthorizeCall, then
  // `body(identity)`; a refusal by either is recorded and the call answered with it.
  grpc::ServerUnaryReactor* ServeAtOnce(
      absl::string_view rpc, grpc::CallbackServerContext* ctx, unsigned rights,
      absl::FunctionRef<absl::Status(const std::string& identity)> body);

  // Completes a validated job with what only the resident store knows: a Morphology on a resident
  // handle with elements in millimetres takes the object's spacing (ResolveMorphologyOnResident),
  // and a Morphology or Label on a resident handle is checked against the object's shape
  // (CheckMorphologyInput, CheckLabelInput, and a resident marker's or intensity image's shape).
  // Other jobs have nothing to complete.
  absl::Status CompleteFromResident(MorphologyJob* job, const v1::MorphologyRequest& request,
                                    absl::string_view identity);
  absl::Status CompleteFromResident(LabelJob* job, const v1::LabelRequest& request,
                                    absl::string_view identity);
  template <typename Job, typename Request>
  absl::Status CompleteFromResident(Job*, const Request&, absl::string_view) {
    return absl::OkStatus();
  }
  // After validation, before the work queue: the `resident` right when the job uses it, the job
  // completed from the resident store (CompleteFromResident), the request's work
  // (CheckRequestWork) and its host bytes (EstimateInflightBytes + `extra_bytes`) held in the
  // in-flight budget. A refusal that may succeed later (the budget's) is OVERLOADED.
  template <typename Job, typename Request>
  absl::StatusOr<InflightBudget::Reservation> Admit(const grpc::ServerContextBase& ctx,
                                                    absl::string_view rpc, Job* job,
                                                    const Request& request,
                                                    const std::string& identity,
                                                    std::uint64_t extra_bytes);

  // The estimated work of a validated request (work_estimate.h) on this server's backend; the
  // errors of InputShape. A plan that fails here counts 0: the request fails when it runs.
  absl::StatusOr<double> RequestWork(const MorphologyJob& job, absl::string_view identity);
  absl::StatusOr<double> RequestWork(const LabelJob& job, absl::string_view identity);
  absl::StatusOr<double> RequestWork(const GradientJob& job, absl::string_view identity);
  absl::StatusOr<double> RequestWork(const PyramidJob& job, absl::string_view identity);
  absl::StatusOr<double> RequestWork(const DetectJob& job, absl::string_view identity);
  absl::StatusOr<double> RequestWork(const DeformJob& job, absl::string_view identity);

  // Each runs a validated job (the job carries what the run needs; the request message is not
  // read again) and fills the response.
  absl::Status RunMorphology(const MorphologyJob& job, CallScope& call,
                             v1::MorphologyResponse* response);
  // RunMorphology and RunGradient once the input is resolved (`in`: the job's input).
  absl::Status MorphologyOf(const MorphologyJob& job, const ResolvedImage& in, CallScope& call,
                            v1::MorphologyResponse* response);
  absl::Status GradientOf(const GradientJob& job, const ResolvedImage& in, CallScope& call,
                          v1::GradientResponse* response);
  absl::Status DetectOf(const DetectJob& job, const ResolvedImage& in, CallScope& call,
                        v1::DetectPedestriansResponse* response);
  // Morphology whose result goes to the shared-memory region job.output names; `marker` as the
  // job's, null when it has none.
  absl::Status MorphologyIntoSharedMemory(const MorphologyJob& job, const ResolvedImage& in,
                                          const ResolvedImage* marker, CallScope& call,
                                          v1::MorphologyResponse* response);
  // A second image of a request (Morphology's marker, Label's intensity) resolved as the input
  // is, except that encoded files decode on the host; nullopt when `input` is. Its decode time
  // adds to the input's.
  absl::StatusOr<absl::optional<ResolvedImage>> ResolveExtraImage(
      const absl::optional<ImageInput>& input, CallScope& call);
  absl::Status RunLabel(const LabelJob& job, CallScope& call, v1::LabelResponse* response);
  absl::Status RunGradient(const GradientJob& job, CallScope& call, v1::GradientResponse* response);
  absl::Status RunPyramid(const PyramidJob& job, CallScope& call, v1::PyramidResponse* response);
  absl::Status RunDeform(const DeformJob& job, CallScope& call, v1::DeformResponse* response);
  // OK when a Deform result may be kept resident: ValidateMesh on its positions (`positions`:
  // the host copy when the call returned them, else null and the mesh is read back);
  // INVALID_ARGUMENT naming output.keep_resident otherwise.
  absl::Status CheckKeptMesh(const BackendMesh& kept, const float* positions);

  const ServerOptions options_;
  const AuthPolicy auth_;
  Backend* backend_;
  WorkQueue* queue_;
  InflightBudget* budget_;
  ResidentStore* store_;
  // JPEG inputs decode in strips on these while they are idle.
  std::unique_ptr<DecodeThreads> decode_threads_;
  // Before decoders_, which points at it. Null without the helper (FrameSandbox::Create).
  std::unique_ptr<FrameSandbox> frame_sandbox_;
  // Those threads and the backend's GPU JPEG decoder (null without one), for ResolveImage.
  ImageDecoders decoders_;
  ServerMetrics* metrics_;
  const ModelRegistry* models_;
  // Regions are unmapped when the service goes (after its requests).
  std::unique_ptr<SharedMemoryRegistry> shared_memory_;
  std::unique_ptr<UploadQuota> uploads_;
  std::atomic<bool> hard_stop_{false};
  LiveCalls live_calls_;
};

// Fills a ResidentObject message from the store's description.
void ToProto(const ResidentInfo& info, v1::ResidentObject* out);

}  // namespace cuimg

#endif  // CUIMG_SERVER_IMAGING_SERVICE_H_
