# The only place that finds dependencies. All come from Debian packages (scripts/install_deps.sh)
# or the CUDA toolkit on the machine; nothing is fetched at configure time.
find_package(Threads REQUIRED)
# CMake 3.25's FindCUDAToolkit (Debian 12's stock module) marks CUDA::nvToolsExt deprecated
# whenever the project requires 3.25 or newer, without checking that the target exists; CUDA 13
# ships no libnvToolsExt (only the header-only nvtx3), so configure stops there. The check reads
# CMAKE_MINIMUM_REQUIRED_VERSION only for that deprecation, so hide it for this one call. Later
# modules test for the target first and are unaffected; we never link nvToolsExt.
set(CUIMG_SAVED_MINIMUM_VERSION "${CMAKE_MINIMUM_REQUIRED_VERSION}")
set(CMAKE_MINIMUM_REQUIRED_VERSION 3.24)
find_package(CUDAToolkit REQUIRED)
set(CMAKE_MINIMUM_REQUIRED_VERSION "${CUIMG_SAVED_MINIMUM_VERSION}")
unset(CUIMG_SAVED_MINIMUM_VERSION)
find_package(absl CONFIG REQUIRED)
# Debian 12 ships no protobuf CMake config: module mode.
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
# The server checks its TLS key against its certificate before gRPC sees them.
find_package(OpenSSL REQUIRED)
find_package(prometheus-cpp CONFIG REQUIRED)
find_package(PNG REQUIRED)
find_package(JPEG REQUIRED)
# The client's volume formats: DICOM through DCMTK (we link dcmdata only) and NRRD through Teem.
find_package(DCMTK CONFIG REQUIRED)
# Debian's TeemConfig.cmake points its imported target at the package's build directory, so find
# the header and library directly.
find_path(CUIMG_TEEM_INCLUDE_DIR teem/nrrd.h REQUIRED)
find_library(CUIMG_TEEM_LIBRARY teem REQUIRED)
add_library(cuimg_teem INTERFACE)
target_include_directories(cuimg_teem SYSTEM INTERFACE ${CUIMG_TEEM_INCLUDE_DIR})
target_link_libraries(cuimg_teem INTERFACE ${CUIMG_TEEM_LIBRARY})
# DICOM pixel data of every transfer syntax through GDCM (libgdcm-dev), which brings its JPEG,
# CharLS and OpenJPEG codecs. Its GDCMConfig.cmake also requires VTK's and others' files, so find
# the header and the libraries directly.
find_path(CUIMG_GDCM_INCLUDE_DIR gdcmImageReader.h PATH_SUFFIXES gdcm-3.0 REQUIRED)
add_library(cuimg_gdcm INTERFACE)
foreach(lib gdcmMSFF gdcmDSED gdcmCommon)
  find_library(CUIMG_${lib}_LIBRARY ${lib} REQUIRED)
  target_link_libraries(cuimg_gdcm INTERFACE ${CUIMG_${lib}_LIBRARY})
endforeach()
target_include_directories(cuimg_gdcm SYSTEM INTERFACE ${CUIMG_GDCM_INCLUDE_DIR})
# DICOM frames decoded and encoded by the server (codec/): JPEG 2000 through OpenJPEG 2.5
# (libopenjp2-7-dev), HTJ2K through OpenJPH (libopenjph-dev, whose openjph.pc is empty, so the
# header and library are found directly), JPEG-LS through CharLS (libcharls-dev); JPEG through
# DCMTK's dcmjpeg (above).
find_package(PkgConfig REQUIRED)
pkg_check_modules(CUIMG_OPENJPEG REQUIRED IMPORTED_TARGET libopenjp2>=2.5)
find_path(CUIMG_OPENJPH_INCLUDE_DIR openjph/ojph_codestream.h REQUIRED)
find_library(CUIMG_OPENJPH_LIBRARY openjph REQUIRED)
add_library(cuimg_openjph INTERFACE)
target_include_directories(cuimg_openjph SYSTEM INTERFACE ${CUIMG_OPENJPH_INCLUDE_DIR})
target_link_libraries(cuimg_openjph INTERFACE ${CUIMG_OPENJPH_LIBRARY})
find_package(charls CONFIG REQUIRED)
# NIfTI-1 and NIfTI-2 through nifticlib's nifti2_io (libnifti2-dev), which reads and writes both.
find_path(CUIMG_NIFTI_INCLUDE_DIR nifti2_io.h PATH_SUFFIXES nifti REQUIRED)
find_library(CUIMG_NIFTI2_LIBRARY nifti2 REQUIRED)
find_library(CUIMG_ZNZ_LIBRARY znz REQUIRED)
find_package(ZLIB REQUIRED)
add_library(cuimg_nifti INTERFACE)
target_include_directories(cuimg_nifti SYSTEM INTERFACE ${CUIMG_NIFTI_INCLUDE_DIR})
target_link_libraries(cuimg_nifti INTERFACE ${CUIMG_NIFTI2_LIBRARY} ${CUIMG_ZNZ_LIBRARY} ZLIB::ZLIB m)

if(CUIMG_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
  include(GoogleTest)
  find_package(Python3 REQUIRED COMPONENTS Interpreter)

  # OpenCV 4.6 is a test oracle only. Debian's config file ships with the heavy libopencv-dev
  # meta package; the module packages we install carry headers and libraries, so find them here.
  find_path(CUIMG_OPENCV_INCLUDE_DIR opencv2/core.hpp PATH_SUFFIXES opencv4 REQUIRED)
  add_library(cuimg_opencv INTERFACE)
  foreach(module core imgproc imgcodecs objdetect videoio)
    find_library(CUIMG_OPENCV_${module} NAMES opencv_${module} REQUIRED)
    target_link_libraries(cuimg_opencv INTERFACE ${CUIMG_OPENCV_${module}})
  endforeach()
  target_include_directories(cuimg_opencv SYSTEM INTERFACE ${CUIMG_OPENCV_INCLUDE_DIR})
  # Just what HOG needs: the OpenCV CPU anchor travels in the GPU bundle with the libraries it
  # loads, and imgcodecs/videoio would bring GDAL and FFmpeg along.
  add_library(cuimg_opencv_hog INTERFACE)
  target_link_libraries(cuimg_opencv_hog INTERFACE ${CUIMG_OPENCV_objdetect} ${CUIMG_OPENCV_imgproc}
                                                   ${CUIMG_OPENCV_core})
  target_include_directories(cuimg_opencv_hog SYSTEM INTERFACE ${CUIMG_OPENCV_INCLUDE_DIR})
endif()

find_program(CUIMG_PROTOC protoc REQUIRED)
find_program(CUIMG_GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
find_program(CUIMG_GRPC_PYTHON_PLUGIN grpc_python_plugin REQUIRED)
