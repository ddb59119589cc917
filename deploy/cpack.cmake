# Install rules for what runs nq for real (man page, systemd units, default
# config, deployment examples) and the .deb package (cpack -G DEB).
#
# Build a package from a clean build dir (the checks in check-package.cmake
# refuse anything else):
#   cmake -S . -B build-pkg -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr -DNQ_TEST_FAULTS=OFF
#   cmake --build build-pkg && (cd build-pkg && cpack -G DEB)
include(GNUInstallDirs)

set(NQ_DEPLOY ${CMAKE_CURRENT_LIST_DIR})

# Man page: version filled in, gzipped as Debian policy wants (-n: reproducible).
configure_file(${NQ_DEPLOY}/nq.1 ${CMAKE_BINARY_DIR}/nq.1 @ONLY)
find_program(NQ_GZIP gzip)
if(NQ_GZIP)
  add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/nq.1.gz
    COMMAND ${NQ_GZIP} -9nc ${CMAKE_BINARY_DIR}/nq.1 > ${CMAKE_BINARY_DIR}/nq.1.gz
    DEPENDS ${CMAKE_BINARY_DIR}/nq.1 COMMENT "Compressing the man page")
  add_custom_target(nq_man ALL DEPENDS ${CMAKE_BINARY_DIR}/nq.1.gz)
  install(FILES ${CMAKE_BINARY_DIR}/nq.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  install(FILES ${CMAKE_BINARY_DIR}/nq.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()

# systemd units and their settings, for the prefix given when installing (`cmake --install build
# --prefix ~/.local` writes only below ~/.local): deploy/install-units.cmake.
install(CODE "set(NQ_DEPLOY \"${NQ_DEPLOY}\")\nset(NQ_DOCDIR_REL \"${CMAKE_INSTALL_DOCDIR}\")")
install(SCRIPT ${NQ_DEPLOY}/install-units.cmake)
set(NQ_CONFDIR /etc/nq)   # the package's (prefix /usr: check-package.cmake)

# The guide and the examples for the other ways to run it.
install(FILES ${NQ_DEPLOY}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${NQ_DEPLOY}/slurm ${NQ_DEPLOY}/k8s ${NQ_DEPLOY}/container USE_SOURCE_PERMISSIONS
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

# ---- the package --------------------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME nq)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "distributed N-Queens counter and solver (broker, workers, clients)")
set(CPACK_PACKAGE_DESCRIPTION
  "nq counts the solutions of the N-Queens problem and finds solutions of very large\n"
  "boards. A broker cuts jobs into shards for workers on any number of machines over\n"
  "ZeroMQ (CURVE-encrypted with keys) and keeps every result in SQLite, so jobs\n"
  "survive crashes and restarts. Includes systemd units for the broker and workers.")
string(REPLACE ";" "" CPACK_PACKAGE_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION}")
if(NOT CPACK_PACKAGE_CONTACT)
  set(CPACK_PACKAGE_CONTACT "nq developers <nq@localhost>")
endif()
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Library dependencies from the binary itself when dpkg-shlibdeps is there
# (dpkg-dev); otherwise the bookworm names of what CMakeLists.txt links. The OpenCL ICD loader
# (ocl-icd-libopencl1, or another libOpenCL.so.1) is one of them: nq runs without a GPU driver,
# and says what to install only when --gpu is asked for.
find_program(NQ_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(NQ_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "libc6, libzmq5, libmsgpackc2, libsqlite3-0, libsodium23, ocl-icd-libopencl1")
  if(MHD_FOUND)
    string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", libmicrohttpd12")
  endif()
endif()
# Maintainer scripts and conffiles: dpkg keeps local edits of /etc/nq/*.env on upgrade.
set(NQ_CONFFILES ${CMAKE_BINARY_DIR}/deb/conffiles)
file(WRITE ${NQ_CONFFILES} "${NQ_CONFDIR}/broker.env\n${NQ_CONFDIR}/worker.env\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${NQ_CONFFILES} ${NQ_DEPLOY}/debian/postinst ${NQ_DEPLOY}/debian/prerm ${NQ_DEPLOY}/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

# What the pre-build check needs to know about this build.
set(CPACK_NQ_TEST_FAULTS "${NQ_TEST_FAULTS}")
set(CPACK_NQ_SANITIZE "${NQ_SANITIZE}")
set(CPACK_NQ_NATIVE "${NQ_NATIVE}")
set(CPACK_NQ_INSTALL_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(CPACK_PRE_BUILD_SCRIPTS ${NQ_DEPLOY}/check-package.cmake)

include(CPack)
