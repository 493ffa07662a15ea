# Writes the man pages and the completion scripts with the freshly built
# binary (BIN), from the tables its parser reads: MAN/agentstack*.1 and
# COMP/{agentstack,_agentstack,agentstack.fish}. Old pages are removed first,
# so a dropped command leaves no page behind. docs/building.md, "Man pages".
file(REMOVE_RECURSE ${MAN} ${COMP})
file(MAKE_DIRECTORY ${MAN} ${COMP})
execute_process(COMMAND ${BIN} help --man ${MAN} RESULT_VARIABLE _rc OUTPUT_QUIET)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "agentstack help --man ${MAN} failed (${_rc})")
endif()
foreach(_pair "bash;agentstack" "zsh;_agentstack" "fish;agentstack.fish")
  list(GET _pair 0 _shell)
  list(GET _pair 1 _file)
  execute_process(COMMAND ${BIN} completions ${_shell} OUTPUT_FILE ${COMP}/${_file}
                  RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "agentstack completions ${_shell} failed (${_rc})")
  endif()
endforeach()
file(WRITE ${STAMP} "")
