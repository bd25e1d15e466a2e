# cmake -DCLOSURE=<file> -DTARGET=<name> -P link_check.cmake: fails when the link closure written
# by link_closure.cmake holds the Docker client, a Docker back-end or libcurl. runner/policy and
# runner/sessions decide and keep sessions; they must work without either (issue 13).
file(STRINGS "${CLOSURE}" libs)
set(bad "")
foreach(lib IN LISTS libs)
  string(TOLOWER "${lib}" low)
  if(low MATCHES "curl" OR low MATCHES "^sandrun_docker" OR low MATCHES "sandrun::docker")
    list(APPEND bad "${lib}")
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "${TARGET} links ${bad} (closure: ${libs})")
endif()
message(STATUS "${TARGET} links: ${libs}")
