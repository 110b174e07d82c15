# bpf_object(NAME SOURCE [DEPENDS headers...] [CFLAGS flags...])
# Compiles SOURCE (a CO-RE program) with clang -target bpf against the committed
# vmlinux.h and generates its libbpf skeleton with `bpftool gen skeleton`.
# Produces an INTERFACE target NAME_skel whose include directory holds NAME.skel.h.
find_program(BPF_CLANG NAMES clang clang-14 REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /usr/local/sbin REQUIRED)

set(ARCPROF_VMLINUX_DIR ${CMAKE_SOURCE_DIR}/vmlinux)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  set(ARCPROF_BPF_ARCH x86)
  set(ARCPROF_VMLINUX_H ${ARCPROF_VMLINUX_DIR}/vmlinux_x86_64.h)
else()
  message(FATAL_ERROR "arcprof: no committed vmlinux.h for ${CMAKE_SYSTEM_PROCESSOR}; see vmlinux/README.md")
endif()

function(bpf_object name source)
  cmake_parse_arguments(ARG "" "" "DEPENDS;CFLAGS" ${ARGN})
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/bpf_gen)
  set(obj ${out_dir}/${name}.bpf.o)
  set(skel ${out_dir}/${name}.skel.h)
  file(MAKE_DIRECTORY ${out_dir}/vmlinux)
  # vmlinux.h is included by its generic name; point it at the per-arch copy.
  configure_file(${ARCPROF_VMLINUX_H} ${out_dir}/vmlinux/vmlinux.h COPYONLY)
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${BPF_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_${ARCPROF_BPF_ARCH}
            -I${out_dir}/vmlinux -I${CMAKE_SOURCE_DIR} -I${CMAKE_SOURCE_DIR}/bpf
            -Wall -Wno-unused-function ${ARG_CFLAGS}
            -c ${CMAKE_CURRENT_SOURCE_DIR}/${source} -o ${obj}
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${source} ${ARG_DEPENDS} ${ARCPROF_VMLINUX_H}
    COMMENT "BPF ${source}"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skel}
    COMMAND ${BPFTOOL} gen skeleton ${obj} name ${name} > ${skel}
    DEPENDS ${obj}
    COMMENT "skeleton ${name}.skel.h"
    VERBATIM)
  add_custom_target(${name}_skel_gen DEPENDS ${skel})
  add_library(${name}_skel INTERFACE)
  add_dependencies(${name}_skel ${name}_skel_gen)
  target_include_directories(${name}_skel INTERFACE ${out_dir})
  target_link_libraries(${name}_skel INTERFACE PkgConfig::LIBBPF)
endfunction()
