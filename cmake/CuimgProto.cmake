# cuimg_generate_protos(<out_var_srcs> <out_dir> <proto_root> <protos...>)
# Runs protoc with the C++ and gRPC C++ generators; outputs land under <out_dir> keeping the
# package path, so includes read "cuimg/v1/morphology.pb.h".
function(cuimg_generate_protos out_srcs out_dir proto_root)
  set(srcs)
  foreach(proto ${ARGN})
    file(RELATIVE_PATH rel "${proto_root}" "${proto}")
    string(REGEX REPLACE "\\.proto$" "" stem "${rel}")
    set(gen "${out_dir}/${stem}.pb.cc" "${out_dir}/${stem}.pb.h"
            "${out_dir}/${stem}.grpc.pb.cc" "${out_dir}/${stem}.grpc.pb.h")
    add_custom_command(
      OUTPUT ${gen}
      COMMAND ${CMAKE_COMMAND} -E make_directory "${out_dir}"
      COMMAND ${CUIMG_PROTOC} --proto_path=${proto_root} --cpp_out=${out_dir}
              --grpc_out=${out_dir} --plugin=protoc-gen-grpc=${CUIMG_GRPC_CPP_PLUGIN} ${proto}
      DEPENDS ${proto}
      COMMENT "protoc ${rel}"
      VERBATIM)
    list(APPEND srcs "${out_dir}/${stem}.pb.cc" "${out_dir}/${stem}.grpc.pb.cc")
  endforeach()
  set(${out_srcs} ${srcs} PARENT_SCOPE)
endfunction()

# cuimg_generate_python_protos(<target> <out_dir> <proto_root> <protos...>): Python message and
# gRPC stubs for the over-the-wire tests and the Python client.
function(cuimg_generate_python_protos target out_dir proto_root)
  set(outs)
  foreach(proto ${ARGN})
    file(RELATIVE_PATH rel "${proto_root}" "${proto}")
    string(REGEX REPLACE "\\.proto$" "" stem "${rel}")
    list(APPEND outs "${out_dir}/${stem}_pb2.py" "${out_dir}/${stem}_pb2_grpc.py")
  endforeach()
  add_custom_command(
    OUTPUT ${outs}
    COMMAND ${CMAKE_COMMAND} -E make_directory "${out_dir}"
    COMMAND ${CUIMG_PROTOC} --proto_path=${proto_root} --python_out=${out_dir}
            --grpc_python_out=${out_dir}
            --plugin=protoc-gen-grpc_python=${CUIMG_GRPC_PYTHON_PLUGIN} ${ARGN}
    DEPENDS ${ARGN}
    COMMENT "protoc (python) ${target}"
    VERBATIM)
  add_custom_target(${target} ALL DEPENDS ${outs})
endfunction()
