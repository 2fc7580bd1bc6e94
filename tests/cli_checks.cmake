# Role: the assertions the command-line behaviour scripts share (check_*_cli.cmake,
# run with cmake -P): each fails the script with a message naming what was checked.
function(check_contains text needle what)
  string(FIND "${text}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: expected to find '${needle}' in: ${text}")
  endif()
endfunction()

function(check_matches text regex what)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${what}: expected a match for '${regex}'")
  endif()
endfunction()
