# Installing sandrun (`cmake --install build --prefix P`) and packaging it (`cpack -G DEB` in the
# build dir). The layout is what sandbox/os/data_dir.h looks for at run time, relative to the
# real path of the executable, so an installed tree can be copied anywhere:
#   P/bin/sandrun, P/bin/sandrun-exec (the exec wrapper: next to sandrun, see exec_wrapper.h)
#   P/share/sandrun/profiles/..., P/share/sandrun/images/... (rootfs.sh executable)
#   P/lib/systemd/system/sandrun.service (ExecStart=P/bin/sandrun serve)
#   P/share/doc/sandrun/README.md
# Nothing of tests/ is installed. The paths are fixed (not GNUInstallDirs): the lookup goes from
# bin/ to ../share/sandrun.

install(TARGETS sandrun sandrun-exec RUNTIME DESTINATION bin
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
