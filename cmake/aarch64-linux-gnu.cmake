# Cross build for AArch64 Linux with Debian's cross toolchain (g++-aarch64-linux-gnu)
# against multiarch :arm64 dev packages (headers in /usr/include, libraries in
# /usr/lib/aarch64-linux-gnu). Binaries run here under qemu-user (qemu-aarch64,
# which finds the :arm64 loader and libraries in their multiarch paths); ctest and
# gtest_discover_tests run them through CMAKE_CROSSCOMPILING_EMULATOR.
# Used by scripts/test-arm64.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
# Programs (python3, promtool) are the build machine's; packages and libraries
# come from the multiarch paths above (CMAKE_LIBRARY_ARCHITECTURE).
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# pkg-config: the :arm64 .pc files only (cpp-httplib, libpcre2-8).
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
