# The Perfetto export's tests decode its output with libprotobuf (only the tests link it: the
# cuprobe binary writes the wire format itself). tests/export/perfetto_subset.proto is compiled at
# build time into a separate gtest executable; perfetto_test.cpp's Chrome JSON tests, which need no
# protobuf, stay in cuprobe_tests (the file is in both: CUPROBE_PERFETTO_PROTO picks the half).
find_package(Protobuf)
if(NOT Protobuf_FOUND OR NOT Protobuf_PROTOC_EXECUTABLE)
  message(FATAL_ERROR "protobuf (libprotobuf-dev, protobuf-compiler) is needed to build the Perfetto "
                      "export's tests; run scripts/deps.sh to install it")
endif()

set(perfetto_proto ${CMAKE_CURRENT_SOURCE_DIR}/export/perfetto_subset.proto)
set(perfetto_gen ${CMAKE_CURRENT_BINARY_DIR}/perfetto_proto)
add_custom_command(
  OUTPUT ${perfetto_gen}/perfetto_subset.pb.cc ${perfetto_gen}/perfetto_subset.pb.h
  COMMAND ${CMAKE_COMMAND} -E make_directory ${perfetto_gen}
  COMMAND ${Protobuf_PROTOC_EXECUTABLE} --cpp_out=${perfetto_gen} -I${CMAKE_CURRENT_SOURCE_DIR}/export ${perfetto_proto}
  DEPENDS ${perfetto_proto}
  COMMENT "protoc perfetto_subset.proto"
  VERBATIM)

add_executable(cuprobe_perfetto_tests ${CMAKE_CURRENT_SOURCE_DIR}/export/perfetto_test.cpp
               ${perfetto_gen}/perfetto_subset.pb.cc)
target_include_directories(cuprobe_perfetto_tests PRIVATE ${perfetto_gen} ${PROJECT_SOURCE_DIR}/analyzer)
# Generated code is not ours to warn about.
set_source_files_properties(${perfetto_gen}/perfetto_subset.pb.cc PROPERTIES COMPILE_OPTIONS "-w")
target_link_libraries(cuprobe_perfetto_tests PRIVATE cuprobe_test_support protobuf::libprotobuf GTest::gtest_main)
target_compile_definitions(cuprobe_perfetto_tests PRIVATE CUPROBE_PERFETTO_PROTO=1
                           CUPROBE_TEST_RULES_DIR="${PROJECT_SOURCE_DIR}/rules")
add_dependencies(cuprobe_perfetto_tests cuprobe cuprobe_shim cuprobe_test_programs simulated_storm)
cuprobe_fast_test_build(cuprobe_perfetto_tests)
gtest_discover_tests(cuprobe_perfetto_tests DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300 ${test_env})
