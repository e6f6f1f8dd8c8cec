# runtime tests (see tests/CMakeLists.txt)
