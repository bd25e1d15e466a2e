# Installing sandrun (`cmake --install build --prefix P`) and packaging it (`cpack -G DEB` in the
# build dir). The layout is what sandbox/os/data_dir.h looks for at run time, relative to the
# real path of the executable, so an installed tree can be copied anywhere:
#   P/bin/sandrun, P/bin/sandrun-exec (the exec wrapper: next to sandrun, see exec_wrapper.h),
#   P/bin/sandrun-agent (the sandbox agent: next to sandrun, see agent_link.h)
#   P/share/sandrun/profiles/..., P/share/sandrun/images/... (rootfs.sh executable)
#   P/lib/systemd/system/sandrun.service (ExecStart=P/bin/sandrun serve)
#   P/share/doc/sandrun/README.md
# Nothing of tests/ is installed. The paths are fixed (not GNUInstallDirs): the lookup goes from
# bin/ to ../share/sandrun.

install(TARGETS sandrun sandrun-exec sandrun-agent RUNTIME DESTINATION bin
        PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                    WORLD_READ WORLD_EXECUTE)
# Modes are set, not copied from the checkout: the profile loaders refuse files that group or
# others can write, and a checkout made under umask 002 has such files.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/profiles/ DESTINATION share/sandrun/profiles
        FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
        DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                              WORLD_READ WORLD_EXECUTE)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/images/ DESTINATION share/sandrun/images
        FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
        DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                              WORLD_READ WORLD_EXECUTE
        PATTERN "*.sh" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                                   WORLD_READ WORLD_EXECUTE)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/sandrun)

# The unit names the binary by the prefix the tree is installed under (/usr for the .deb), which
# is known only at install time: it is written then.
set(SANDRUN_UNIT_TEMPLATE ${CMAKE_CURRENT_LIST_DIR}/sandrun.service.in)
# Written straight into the destination (no staging file in the build dir: an install and a
# cpack may run at the same time with different prefixes).
install(CODE "
  set(SANDRUN_BINDIR \"\${CMAKE_INSTALL_PREFIX}/bin\")
  set(SANDRUN_DOC \"\${CMAKE_INSTALL_PREFIX}/share/doc/sandrun/README.md\")
  set(sandrun_unit \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/systemd/system/sandrun.service\")
  message(STATUS \"Installing: \${sandrun_unit}\")
  configure_file(\"${SANDRUN_UNIT_TEMPLATE}\" \"\${sandrun_unit}\" @ONLY)
  file(CHMOD \"\${sandrun_unit}\" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${CMAKE_INSTALL_PREFIX}/lib/systemd/system/sandrun.service\")
")

# The .deb. What the binary needs at run time: `objdump -p build/sandrun | grep NEEDED` (libc,
# libssl3 for the TLS listener; libstdc++, libgcc, libseccomp and libcap are linked statically
# when SANDRUN_STATIC_RUNTIME) plus libcurl4, which is dlopen'ed (sandbox/docker/curl_lib.h) and so
# is not in NEEDED. The engine may be remote (DOCKER_HOST): docker.io is recommended, not required.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME sandrun)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR sandrun)
set(CPACK_PACKAGE_CONTACT "sandrun maintainers <sandrun@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "sandbox-first runner for AI agents' shell commands")
set(CPACK_PACKAGE_DESCRIPTION
    "Runs the exec and process tools of OpenClaw: commands run in Docker containers driven\
 through the Engine API and fail closed; host commands are hardened with seccomp and\
 capabilities. Includes the sandrun.service unit for `sandrun serve`.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(sandrun_deb_depends "libc6 (>= 2.34), libssl3 (>= 3.0.0), libcurl4 (>= 7.74.0)")
if(NOT SANDRUN_STATIC_RUNTIME)
  string(APPEND sandrun_deb_depends
         ", libstdc++6 (>= 12), libgcc-s1, libseccomp2 (>= 2.5.0), libcap2 (>= 1:2.44)")
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${sandrun_deb_depends}")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "docker.io, e2fsprogs")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_CURRENT_LIST_DIR}/postinst ${CMAKE_CURRENT_LIST_DIR}/prerm
    ${CMAKE_CURRENT_LIST_DIR}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Packages land in the build dir's packages/ (cpack -B DIR elsewhere).
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
include(CPack)
