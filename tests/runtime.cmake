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
beatline_runtime_test(runtime_generated_build GeneratedBuildTest)
beatline_runtime_test(runtime_awt AwtDispatchTest)
beatline_runtime_test(runtime_block_event BlockEventTest)
beatline_runtime_test(runtime_reentry ReentryTest)
beatline_runtime_test(runtime_gate GateTest)
beatline_runtime_test(runtime_flush_wake FlushWakeTest)
beatline_runtime_test(runtime_start_cost StartCostTest)

# Network requests (issue 16): the test program tests/runtime/netapp, compiled
# against Debian's OkHttp 3.13 into its own jar (not on the tests' class path:
# NetworkTest instruments it and runs it in child JVMs with OkHttp 3.13, 4.12
# from BEATLINE_KOTLIN_DEPS, or no OkHttp).
file(GLOB BEATLINE_NETAPP_SRC CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/runtime/netapp/*.java)
set(CMAKE_JAVA_COMPILE_FLAGS --release 8 -encoding UTF-8)
add_jar(beatline-netapp
        SOURCES ${BEATLINE_NETAPP_SRC}
        INCLUDE_JARS ${BEATLINE_OKHTTP3_JARS}
        OUTPUT_DIR ${CMAKE_BINARY_DIR}/lib)
set(CMAKE_JAVA_COMPILE_FLAGS "${_bl_saved_flags}")
add_dependencies(beatline-runtime-tests beatline-netapp beatline-instrument)
beatline_runtime_test(runtime_network NetworkTest)
beatline_runtime_test(runtime_network_event NetEventTest)
beatline_runtime_test(runtime_network_wrap NetWrapTest)

# Android tests (issue 13): the Android source set under Robolectric 4.11.1,
# SDK 34, offline: the jars scripts/install-deps copied with Maven into
# BEATLINE_ANDROID_DEPS (runtime/CMakeLists.txt); nothing is downloaded while
# they run (robolectric.offline=true, robolectric.dependency.dir).
file(GLOB _bl_robo_jars ${BEATLINE_ANDROID_DEPS}/*.jar)
list(FILTER _bl_robo_jars EXCLUDE REGEX "/android-all")   # added below, compile/verify only
file(GLOB BEATLINE_ANDROID_TEST_SRC CONFIGURE_DEPENDS
     ${CMAKE_CURRENT_SOURCE_DIR}/runtime/android/io/beatline/runtime/*.java)
# The launch tests' app (issue 15): tests/runtime/android-launch/launchapp,
# compiled against android-all and the runtime, then instrumented by the real
# beatline-instrument (probes and launch hooks, --classpath android-all) into
# lib/beatline-launchapp-instr.jar (+ its method-ID file), which the launch
# test runs (the plain jar is for compiling the test only).
file(GLOB BEATLINE_LAUNCHAPP_SRC CONFIGURE_DEPENDS
     ${CMAKE_CURRENT_SOURCE_DIR}/runtime/android-launch/launchapp/*.java)
set(CMAKE_JAVA_COMPILE_FLAGS --release 8 -encoding UTF-8 -Xlint:-options -Xlint:-classfile)
add_jar(beatline-launchapp
        SOURCES ${BEATLINE_LAUNCHAPP_SRC}
        INCLUDE_JARS beatline-runtime beatline-android ${BEATLINE_ANDROID_ALL}
        OUTPUT_DIR ${CMAKE_BINARY_DIR}/lib)
set(BEATLINE_LAUNCHAPP_INSTR ${CMAKE_BINARY_DIR}/lib/beatline-launchapp-instr.jar)
set(BEATLINE_LAUNCHAPP_IDS ${CMAKE_BINARY_DIR}/lib/beatline-launchapp-ids.txt)
add_custom_command(OUTPUT ${BEATLINE_LAUNCHAPP_INSTR} ${BEATLINE_LAUNCHAPP_IDS}
  COMMAND $<TARGET_FILE:beatline-instrument> -q --no-skip-trivial --classpath ${BEATLINE_ANDROID_ALL}
          ${CMAKE_BINARY_DIR}/lib/beatline-launchapp.jar -o ${BEATLINE_LAUNCHAPP_INSTR}
          --method-ids ${BEATLINE_LAUNCHAPP_IDS}
  DEPENDS beatline-launchapp beatline-instrument ${CMAKE_BINARY_DIR}/lib/beatline-launchapp.jar
  COMMENT "Instrumenting the launch tests' app"
  VERBATIM)
add_custom_target(beatline-launchapp-instr ALL DEPENDS ${BEATLINE_LAUNCHAPP_INSTR})
set(CMAKE_JAVA_COMPILE_FLAGS -encoding UTF-8 -Xlint:-classfile)
add_jar(beatline-android-tests
        SOURCES ${BEATLINE_ANDROID_TEST_SRC}
        INCLUDE_JARS beatline-runtime beatline-android beatline-runtime-tests ${BEATLINE_JUNIT_JARS}
                     ${_bl_robo_jars} ${BEATLINE_ANDROID_ALL} beatline-launchapp
        OUTPUT_DIR ${CMAKE_BINARY_DIR}/lib)
add_dependencies(beatline-android-tests beatline-launchapp-instr)
set(CMAKE_JAVA_COMPILE_FLAGS "${_bl_saved_flags}")
set(_bl_robo_cp "${CMAKE_BINARY_DIR}/lib/beatline-android-tests.jar:${CMAKE_BINARY_DIR}/lib/beatline-android.jar:${_bl_rt_cp}")
foreach(_j ${_bl_robo_jars})
  string(APPEND _bl_robo_cp ":${_j}")
endforeach()
# last, as Gradle puts android.jar: lets the JVM verify the test classes it
# loads before Robolectric's sandbox takes over (which loads android.* from
# the instrumented jar in robolectric.dependency.dir, never from here)
string(APPEND _bl_robo_cp ":${BEATLINE_ANDROID_ALL}")

function(beatline_android_test name class)
  add_test(NAME ${name}
           COMMAND ${Java_JAVA_EXECUTABLE} -cp ${_bl_robo_cp}
                   -Drobolectric.offline=true
                   -Drobolectric.dependency.dir=${BEATLINE_ANDROID_DEPS}
                   -Drobolectric.logging.enabled=false
                   -Dbeatline.test.build=${CMAKE_BINARY_DIR}
                   -Dbeatline.test.source=${PROJECT_SOURCE_DIR}
                   org.junit.runner.JUnitCore io.beatline.runtime.${class})
  set_tests_properties(${name} PROPERTIES TIMEOUT 600 LABELS "runtime;android")
endfunction()

beatline_android_test(runtime_android_looper LooperDispatchTest)

# The AAR (issue 14): entries, manifest provider, consumer rules applied by
# Debian's ProGuard (tests/runtime/android/aar_test.sh).
add_test(NAME runtime_android_aar
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/runtime/android/aar_test.sh ${CMAKE_BINARY_DIR} ${BEATLINE_ANDROID_ALL})
set_tests_properties(runtime_android_aar PROPERTIES TIMEOUT 300 LABELS "runtime;android")
beatline_android_test(runtime_android_runtime AndroidRuntimeTest)
beatline_android_test(runtime_android_gate LooperGateTest)

# Issue 15: launches under Robolectric — the framework's lifecycle drives the
# instrumented test app (cold, warm, hot, splash, service-only, backgrounded
# before the first frame), frames from Robolectric's Choreographer.
add_test(NAME runtime_android_launch
         COMMAND ${Java_JAVA_EXECUTABLE} -cp ${BEATLINE_LAUNCHAPP_INSTR}:${_bl_robo_cp}
                 -Drobolectric.offline=true
                 -Drobolectric.dependency.dir=${BEATLINE_ANDROID_DEPS}
                 -Drobolectric.logging.enabled=false
                 -Dbeatline.test.build=${CMAKE_BINARY_DIR}
                 -Dbeatline.test.source=${PROJECT_SOURCE_DIR}
                 -Dbeatline.test.launchIds=${BEATLINE_LAUNCHAPP_IDS}
                 org.junit.runner.JUnitCore io.beatline.runtime.LaunchTest)
set_tests_properties(runtime_android_launch PROPERTIES TIMEOUT 600 LABELS "runtime;android")

# Issue 15, end to end (tests/integration/launch_e2e_test.sh): the test app
# obfuscated with ProGuard, instrumented, run under Robolectric
# (LaunchE2ETest) uploading to a real beatline-server on loopback. Registered
# here, not beside server_integration, because it needs the Robolectric
# class path above.
add_test(NAME launch_e2e_integration
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/launch_e2e_test.sh
                 ${CMAKE_BINARY_DIR} ${CMAKE_BINARY_DIR}/launch-e2e-work ${BEATLINE_ANDROID_ALL}
                 ${_bl_robo_cp} ${BEATLINE_ANDROID_DEPS})
set_tests_properties(launch_e2e_integration PROPERTIES TIMEOUT 600 LABELS "integration;android")
