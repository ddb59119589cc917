# Run by `cmake --install` (deploy/cpack.cmake): the systemd units and their settings, for the
# prefix given then, not the one configured (an absolute path fixed at configure time wrote
# /usr/local/etc/nq whatever --prefix said, which a user cannot write). The settings go to
# PREFIX/etc/nq, and for PREFIX /usr (the .deb) to /etc/nq, as GNUInstallDirs and Debian have it;
# the units name PREFIX/bin/nq and that folder. DESTDIR (cpack's staging) is honoured.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(NQ_CONFDIR /etc/nq)
else()
  set(NQ_CONFDIR "${CMAKE_INSTALL_PREFIX}/etc/nq")
endif()
set(NQ_BINDIR "${CMAKE_INSTALL_PREFIX}/bin")
set(NQ_DOCDIR "${CMAKE_INSTALL_PREFIX}/${NQ_DOCDIR_REL}")

set(units "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
file(MAKE_DIRECTORY "${units}")
foreach(unit nq-broker.service nq-worker@.service nq-gpu-worker@.service)
  file(READ "${NQ_DEPLOY}/systemd/${unit}.in" text)
  string(CONFIGURE "${text}" text @ONLY)
  message(STATUS "Installing: ${units}/${unit}")
  file(WRITE "${units}/${unit}" "${text}")
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${units}/${unit}")
endforeach()
file(INSTALL DESTINATION "${NQ_CONFDIR}" TYPE FILE   # file(INSTALL) adds DESTDIR itself
     FILES "${NQ_DEPLOY}/config/broker.env" "${NQ_DEPLOY}/config/worker.env")
# Where the units look for keys; workers/ holds the admitted workers' public keys.
file(MAKE_DIRECTORY "$ENV{DESTDIR}${NQ_CONFDIR}/keys/workers")
