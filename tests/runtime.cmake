# runtime tests (see tests/CMakeLists.txt): JUnit 4 (Debian junit4) against
# the runtime jar, the real beatline-batch and beatline-server, real JVMs.
find_package(Java 1.8 REQUIRED COMPONENTS Development Runtime)
include(UseJava)
set(BEATLINE_JUNIT_JARS /usr/share/java/junit4.jar /usr/share/java/hamcrest-core.jar)
foreach(_j ${BEATLINE_JUNIT_JARS})
  if(NOT EXISTS ${_j})
    message(FATAL_ERROR "${_j} not found: run scripts/install-deps (junit4)")
  endif()
endforeach()

file(GLOB BEATLINE_RUNTIME_TEST_SRC CONFIGURE_DEPENDS
     ${CMAKE_CURRENT_SOURCE_DIR}/runtime/io/beatline/runtime/*.java
     ${CMAKE_CURRENT_SOURCE_DIR}/runtime/demo/*.java)
set(_bl_saved_flags "${CMAKE_JAVA_COMPILE_FLAGS}")
set(CMAKE_JAVA_COMPILE_FLAGS -encoding UTF-8)
add_jar(beatline-runtime-tests
        SOURCES ${BEATLINE_RUNTIME_TEST_SRC}
        INCLUDE_JARS beatline-runtime ${BEATLINE_JUNIT_JARS}
        OUTPUT_DIR ${CMAKE_BINARY_DIR}/lib)
set(CMAKE_JAVA_COMPILE_FLAGS "${_bl_saved_flags}")
add_dependencies(beatline-runtime-tests beatline-server beatline-batch)

set(_bl_rt_cp "${CMAKE_BINARY_DIR}/lib/beatline-runtime-tests.jar:${CMAKE_BINARY_DIR}/lib/beatline-runtime.jar")
foreach(_j ${BEATLINE_JUNIT_JARS})
  string(APPEND _bl_rt_cp ":${_j}")
endforeach()

function(beatline_runtime_test name class)
  add_test(NAME ${name}
           COMMAND ${Java_JAVA_EXECUTABLE} -cp ${_bl_rt_cp}
                   -Dbeatline.test.build=${CMAKE_BINARY_DIR}
                   -Dbeatline.test.source=${PROJECT_SOURCE_DIR}
                   org.junit.runner.JUnitCore io.beatline.runtime.${class})
  set_tests_properties(${name} PROPERTIES TIMEOUT 300 LABELS runtime)
endfunction()

beatline_runtime_test(runtime_ring RingTest)
beatline_runtime_test(runtime_encoder EncoderTest)
beatline_runtime_test(runtime_upload UploadTest)
beatline_runtime_test(runtime_jvm JvmRunTest)
beatline_runtime_test(runtime_segments SegmentTest)
beatline_runtime_test(runtime_span SpanTest)
beatline_runtime_test(runtime_backlog BacklogTest)
beatline_runtime_test(runtime_spool SpoolTest)
