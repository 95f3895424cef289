# Build step of tests/programs/inline_probe (tests/programs/CMakeLists.txt): splits its debug
# information out the way distributions ship it, for the symbolizer's tests. Variables: PROGRAM
# (the built program), OBJCOPY, READELF. Writes beside PROGRAM:
#   NAME.stripped          without .symtab and DWARF, with a .gnu_debuglink naming NAME.debug
#   NAME.debug             the debug file (sections compressed, as cuprobe's own packages have them)
#   NAME.build-id          its GNU build id, hex
#   NAME.debug-root/.build-id/NN/REST.debug   the same debug file where a debug root keeps it
get_filename_component(dir "${PROGRAM}" DIRECTORY)
get_filename_component(name "${PROGRAM}" NAME)
execute_process(COMMAND "${READELF}" -n "${PROGRAM}" OUTPUT_VARIABLE notes RESULT_VARIABLE rc)
string(REGEX MATCH "Build ID: ([0-9a-f]+)" _ "${notes}")
set(id "${CMAKE_MATCH_1}")
if(NOT rc EQUAL 0 OR id STREQUAL "")
  message(FATAL_ERROR "split_debug: ${PROGRAM} has no GNU build id (readelf -n)")
endif()
file(WRITE "${dir}/${name}.build-id" "${id}")
execute_process(COMMAND "${OBJCOPY}" --only-keep-debug --compress-debug-sections "${name}" "${name}.debug"
                WORKING_DIRECTORY "${dir}" RESULT_VARIABLE rc1)
execute_process(COMMAND "${OBJCOPY}" --strip-all "--add-gnu-debuglink=${name}.debug" "${name}" "${name}.stripped"
                WORKING_DIRECTORY "${dir}" RESULT_VARIABLE rc2)
string(SUBSTRING "${id}" 0 2 head)
string(SUBSTRING "${id}" 2 -1 rest)
file(MAKE_DIRECTORY "${dir}/${name}.debug-root/.build-id/${head}")
file(COPY_FILE "${dir}/${name}.debug" "${dir}/${name}.debug-root/.build-id/${head}/${rest}.debug" RESULT rc3)
if(NOT rc1 EQUAL 0 OR NOT rc2 EQUAL 0 OR NOT rc3 EQUAL 0)
  message(FATAL_ERROR "split_debug: splitting the debug information of ${PROGRAM} failed (objcopy: ${rc1} ${rc2}; copy: ${rc3})")
endif()
