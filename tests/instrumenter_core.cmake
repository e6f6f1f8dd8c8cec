# instrumenter_core tests (see tests/CMakeLists.txt)
