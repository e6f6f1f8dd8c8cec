# instrumenter_cli tests (see tests/CMakeLists.txt): the beatline-instrument
# driver — rules, methodId assignment (Check unit tests) and the tool as a
# user runs it on real Debian jars (tests/cli/instrument_cli_test.sh).
function(beatline_instrument_unit_test name)
  add_executable(${name} unit/${name}.c)
  target_link_libraries(${name} PRIVATE beatline_instrument beatline_core PkgConfig::CHECK)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "CK_DEFAULT_TIMEOUT=60")
endfunction()

beatline_instrument_unit_test(instrument_rules_test)
beatline_instrument_unit_test(instrument_ids_test)

# Reads a method-ID file with the server's reader (strict): used by the CLI test.
add_executable(instrument_idcheck cli/instrument_idcheck.c)
target_link_libraries(instrument_idcheck PRIVATE beatline_core)

if(TARGET beatline-instrument)
  add_test(NAME instrument_cli
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/instrument_cli_test.sh
                   ${CMAKE_BINARY_DIR} ${CMAKE_BINARY_DIR}/instrument-cli)
  set_tests_properties(instrument_cli PROPERTIES TIMEOUT 300 LABELS cli)
  # issue 14: an AGP-shaped run (20 inputs, 17 named classes.jar), every
  # output verified with java -Xverify:all and ASM's analyzer (~35 s)
  add_test(NAME instrument_agp
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/instrument_agp_test.sh
                   ${CMAKE_BINARY_DIR} ${CMAKE_BINARY_DIR}/instrument-agp)
  set_tests_properties(instrument_agp PROPERTIES TIMEOUT 600 LABELS "cli;instrumenter")
  # issue 15: launch hooks by class hierarchy (--classpath android-all and a
  # library jar), verified with java -Xverify:all and ASM's analyzer
  if(DEFINED BEATLINE_ANDROID_ALL AND EXISTS "${BEATLINE_ANDROID_ALL}")
    add_test(NAME instrument_launch
             COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/instrument_launch_test.sh
                     ${CMAKE_BINARY_DIR} ${CMAKE_BINARY_DIR}/instrument-launch ${BEATLINE_ANDROID_ALL})
    set_tests_properties(instrument_launch PROPERTIES TIMEOUT 300 LABELS "cli;instrumenter")
  endif()
  # issue 14: --build-id / --version-name / --build-class (schema/build-id.md)
  add_test(NAME instrument_buildid
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/instrument_buildid_test.sh
                   ${CMAKE_BINARY_DIR} ${CMAKE_BINARY_DIR}/instrument-buildid)
  set_tests_properties(instrument_buildid PROPERTIES TIMEOUT 300 LABELS cli)
  # issue 13: --skip-small N (small methods left alone: the warm-up cost)
  add_test(NAME instrument_skip_small
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/instrument_skip_small_test.sh
                   ${CMAKE_BINARY_DIR} ${CMAKE_BINARY_DIR}/instrument-skip-small)
  set_tests_properties(instrument_skip_small PROPERTIES TIMEOUT 300 LABELS cli)
  # issue 14, re-entry: the runtime's callback interfaces implemented by the
  # app (Clock, ThreadPolicy, ...) are left without probes (--skip-callbacks)
  if(TARGET beatline-runtime)
    add_test(NAME instrument_callbacks
             COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/instrument_callbacks_test.sh
                     ${CMAKE_BINARY_DIR} ${CMAKE_BINARY_DIR}/instrument-callbacks)
    set_tests_properties(instrument_callbacks PROPERTIES TIMEOUT 300 LABELS cli)
  endif()
endif()

# issue 14: the instrumenter-only configuration (-DBEATLINE_INSTRUMENTER_ONLY=ON,
# -DBEATLINE_POSIX_ONLY=ON) configures with only libzip and libdeflate visible
# to pkg-config, builds in a folder of this build tree (~10 s) and runs with
# the POSIX fallbacks of renameat2/syncfs.
add_test(NAME instrument_only_build
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/instrument_only_build_test.sh
                 ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR}/instrument-only-build)
set_tests_properties(instrument_only_build PROPERTIES TIMEOUT 300 LABELS "cli;build")
