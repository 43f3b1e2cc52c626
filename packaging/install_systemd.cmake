# Runs at install time (packaging/CMakeLists.txt), where CMAKE_INSTALL_PREFIX is the prefix being
# installed to (`cmake --install --prefix` included) and DESTDIR, when set, is applied by
# file(INSTALL). Directories given relative are taken under the prefix, as GNUInstallDirs does;
# a relative sysconfdir under the prefix /usr or / is /etc, its "FULL" rule.

function(kd_full_dir out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "${CMAKE_INSTALL_PREFIX}/${dir}" PARENT_SCOPE)
  endif()
endfunction()

kd_full_dir(KD_BINDIR "${KD_BINDIR}")
kd_full_dir(KD_DOCDIR "${KD_DOCDIR}")
kd_full_dir(unit_dir "${KD_SYSTEMD_UNIT_DIR}")
kd_full_dir(sysusers_dir "${KD_SYSUSERS_DIR}")
if(NOT IS_ABSOLUTE "${KD_SYSCONFDIR}" AND KD_SYSCONFDIR STREQUAL "etc"
   AND (CMAKE_INSTALL_PREFIX STREQUAL "/usr" OR CMAKE_INSTALL_PREFIX STREQUAL "/"))
  set(KD_SYSCONFDIR "/etc")
else()
  kd_full_dir(KD_SYSCONFDIR "${KD_SYSCONFDIR}")
endif()

# One staging file per destination: installs into two prefixes may run at once (the tests do).
string(MD5 destination "$ENV{DESTDIR}|${CMAKE_INSTALL_PREFIX}")
set(staged "${KD_STAGING_DIR}/${destination}/kdispatchd.service")
configure_file("${KD_UNIT_TEMPLATE}" "${staged}" @ONLY)
file(INSTALL DESTINATION "${unit_dir}" TYPE FILE FILES "${staged}")
file(REMOVE_RECURSE "${KD_STAGING_DIR}/${destination}")
file(INSTALL DESTINATION "${sysusers_dir}" TYPE FILE FILES "${KD_SYSUSERS_FILE}")

# The configuration file is the administrator's once installed: an edited one is kept, and the
# packaged version is put beside it as kdispatchd.toml.dist.
set(config_dir "${KD_SYSCONFDIR}/kdispatch")
set(installed_config "$ENV{DESTDIR}${config_dir}/kdispatchd.toml")
if(EXISTS "${installed_config}")
  file(READ "${installed_config}" current)
  file(READ "${KD_CONFIG_FILE}" packaged)
  if(NOT current STREQUAL packaged)
    message(STATUS "Keeping the edited ${installed_config}; the packaged one is kdispatchd.toml.dist")
    file(INSTALL DESTINATION "${config_dir}" TYPE FILE FILES "${KD_CONFIG_FILE}"
         RENAME kdispatchd.toml.dist)
    return()
  endif()
endif()
file(INSTALL DESTINATION "${config_dir}" TYPE FILE FILES "${KD_CONFIG_FILE}")
