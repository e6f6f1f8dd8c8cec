# instrumenter_java tests (see tests/CMakeLists.txt): the Java-side proof for
# beatline-instrument (issue 4). Scripts and Java sources in tests/instrumenter/;
# everything is compiled at test time under the build dir.
#
#   instrumenter_verify_jars       real Debian jars instrumented with
#                                  --no-skip-trivial: JVM -Xverify:all load +
#                                  init, ASM analyzer, probes on every method
#   instrumenter_kotlin_jars       the same on Kotlin jars from Maven Central
#   instrumenter_behaviour         test programs: same stdout, exact call trees
#   instrumenter_harness_reference both harnesses pass on jars/programs made by
#                                  the ASM reference instrumenter (--mode full)
#                                  and fail on deliberately broken variants
# The first two are skipped (exit 77) until bin/beatline-instrument is built.
set(BL_INSTR_JAVA_DIR ${CMAKE_CURRENT_SOURCE_DIR}/instrumenter)
set(BL_INSTR_JAVA_WORK ${CMAKE_BINARY_DIR}/instrumenter-java)

add_test(NAME instrumenter_verify_jars
         COMMAND bash ${BL_INSTR_JAVA_DIR}/verify_jars_test.sh
                 ${CMAKE_BINARY_DIR} ${BL_INSTR_JAVA_WORK}/verify-jars)
set_tests_properties(instrumenter_verify_jars PROPERTIES
                     TIMEOUT 600 LABELS "instrumenter;java;realworld" SKIP_RETURN_CODE 77)

# issue 14: Kotlin-compiled jars from Maven Central (kotlin-stdlib,
# kotlinx-coroutines-core-jvm, okio-jvm, OkHttp 4; fetched by
# scripts/install-deps), verified as above (~45 s)
add_test(NAME instrumenter_kotlin_jars
         COMMAND bash ${BL_INSTR_JAVA_DIR}/kotlin_jars_test.sh
                 ${CMAKE_BINARY_DIR} ${BL_INSTR_JAVA_WORK}/kotlin-jars)
set_tests_properties(instrumenter_kotlin_jars PROPERTIES
                     TIMEOUT 600 LABELS "instrumenter;java;realworld" SKIP_RETURN_CODE 77)

add_test(NAME instrumenter_behaviour
         COMMAND bash ${BL_INSTR_JAVA_DIR}/behaviour_test.sh
                 ${CMAKE_BINARY_DIR} ${BL_INSTR_JAVA_WORK}/behaviour)
set_tests_properties(instrumenter_behaviour PROPERTIES
                     TIMEOUT 600 LABELS "instrumenter;java" SKIP_RETURN_CODE 77)

add_test(NAME instrumenter_harness_reference
         COMMAND bash ${BL_INSTR_JAVA_DIR}/harness_test.sh
                 ${CMAKE_BINARY_DIR} ${BL_INSTR_JAVA_WORK}/harness)
set_tests_properties(instrumenter_harness_reference PROPERTIES
                     TIMEOUT 600 LABELS "instrumenter;java")
