# instrumenter_core tests (see tests/CMakeLists.txt): the class-file reader and
# probe insertion (instrumenter/classfile.c, probe.c, bytecode.c, ...), Check
# unit tests against real jars from /usr/share/java and crafted classes.
function(beatline_instrument_test name)
  add_executable(${name} unit/${name}.c)
  target_link_libraries(${name} PRIVATE beatline_instrument beatline_core PkgConfig::CHECK
                        PkgConfig::LIBZIP)
  target_compile_definitions(${name} PRIVATE BL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "CK_DEFAULT_TIMEOUT=300"
                       SKIP_RETURN_CODE 77 LABELS instrumenter)
endfunction()

beatline_instrument_test(classfile_test)

# Test tool: instruments a jar into a directory (JVM acceptance tests).
add_executable(probe_dump instrumenter/probe_dump.c)
target_include_directories(probe_dump PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/unit)
target_link_libraries(probe_dump PRIVATE beatline_instrument beatline_core PkgConfig::LIBZIP)
beatline_instrument_test(probe_test)
# Network call sites rewritten in place (issue 16, instrumenter/netsite.h).
beatline_instrument_test(netsite_test)

# JVM acceptance: five Debian jars instrumented, checked by ASM's
# CheckClassAdapter and loaded under java -Xverify:all (about 15 s).
add_test(NAME instrumenter_core_jvm
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/instrumenter/core_jvm.sh
                 ${CMAKE_BINARY_DIR}/bin ${PROJECT_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/instrumenter-core-jvm)
set_tests_properties(instrumenter_core_jvm PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77
                     LABELS "instrumenter;realworld")
