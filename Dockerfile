# cuimg for GPU nodes: build on CUDA 13 devel, run on CUDA 13 runtime, non-root. The build uses the
# scripts CI uses (scripts/install_deps.sh, scripts/build.sh); the runtime stage gets only the
# binaries and the shared libraries they load (scripts/collect_libs.sh).
FROM nvidia/cuda:13.0.0-devel-ubuntu24.04 AS build
WORKDIR /src
COPY scripts/install_deps.sh scripts/install_deps.sh
RUN bash scripts/install_deps.sh build
COPY . .
RUN CUIMG_BUILD_DIR=/build bash scripts/build.sh -DCUIMG_BUILD_TESTS=OFF -DCUIMG_BUILD_BENCHMARKS=OFF
RUN mkdir -p /opt/cuimg/bin /opt/cuimg/share/cuimg \
 && cp /build/server/cuimg-server /build/client/cuimg /opt/cuimg/bin/ \
 && cp -r models /opt/cuimg/share/cuimg/models \
 && bash scripts/collect_libs.sh /opt/cuimg/lib /opt/cuimg/bin/cuimg-server /opt/cuimg/bin/cuimg

FROM nvidia/cuda:13.0.0-runtime-ubuntu24.04 AS runtime
COPY --from=build /opt/cuimg /opt/cuimg
RUN useradd --system --uid 10001 --no-create-home cuimg
ENV PATH=/opt/cuimg/bin:$PATH
USER 10001
# 50051: gRPC (Imaging, grpc.health.v1, reflection); 9464: Prometheus /metrics.
EXPOSE 50051 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
  CMD ["cuimg", "--target=127.0.0.1:50051", "--timeout=2", "health"]
ENTRYPOINT ["cuimg-server", "--listen_address=0.0.0.0:50051", "--metrics_address=0.0.0.0:9464"]
