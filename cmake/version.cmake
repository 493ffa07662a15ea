# Writes as_version.h only when its content changes, so an unchanged commit
# does not force a relink.
execute_process(COMMAND git -C ${SRC} rev-parse --short=7 HEAD
                OUTPUT_VARIABLE _commit OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0 OR _commit STREQUAL "")
  set(_commit "unknown")
endif()
set(_text "#define AS_VERSION \"${VERSION}\"\n#define AS_COMMIT \"${_commit}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} _old)
else()
  set(_old "")
endif()
if(NOT _old STREQUAL _text)
  file(WRITE ${OUT} "${_text}")
endif()
