# instrumenter_java tests (see tests/CMakeLists.txt)
