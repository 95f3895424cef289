# Install-time step (see the end of the top-level CMakeLists.txt): the installed `cuprobe` and
# libcuprobe.so are stripped, their debug information kept beside the install where gdb and
# debuginfod look for it, <prefix>/lib/debug/.build-id/NN/REST.debug (NN: the first byte of the
# GNU build id). Packages leave lib/debug out of the main package and ship it separately
# (scripts/package.sh). Variables: CUPROBE_SPLIT_FILES (paths relative to the prefix),
# CUPROBE_OBJCOPY, CUPROBE_READELF.
set(prefix "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}")
foreach(rel IN LISTS CUPROBE_SPLIT_FILES)
  set(file "${prefix}/${rel}")
  if(NOT EXISTS "${file}")
    continue()
  endif()
  execute_process(COMMAND "${CUPROBE_READELF}" -n "${file}" OUTPUT_VARIABLE notes RESULT_VARIABLE rc)
  string(REGEX MATCH "Build ID: ([0-9a-f]+)" _ "${notes}")
  set(id "${CMAKE_MATCH_1}")
  if(NOT rc EQUAL 0 OR id STREQUAL "")
    message(FATAL_ERROR "cuprobe install: ${file} has no GNU build id (readelf -n); cannot keep its debug information")
  endif()
  string(SUBSTRING "${id}" 0 2 head)
  string(SUBSTRING "${id}" 2 -1 rest)
  set(debug "${prefix}/lib/debug/.build-id/${head}/${rest}.debug")
  get_filename_component(debug_dir "${debug}" DIRECTORY)
  file(MAKE_DIRECTORY "${debug_dir}")
  message(STATUS "Splitting debug information: ${file} -> ${debug}")
  execute_process(COMMAND "${CUPROBE_OBJCOPY}" --only-keep-debug --compress-debug-sections "${file}" "${debug}"
                  RESULT_VARIABLE rc1)
  execute_process(COMMAND "${CUPROBE_OBJCOPY}" --strip-unneeded --remove-section=.comment "${file}" RESULT_VARIABLE rc2)
  if(NOT rc1 EQUAL 0 OR NOT rc2 EQUAL 0)
    message(FATAL_ERROR "cuprobe install: splitting the debug information of ${file} failed (objcopy)")
  endif()
endforeach()
