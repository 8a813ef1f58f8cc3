# Run by cmake --install (CMakeLists.txt): the installed FILE keeps only what runs; its debug
# information moves to DEBUG_FILE (objcopy --only-keep-debug), found again by gdb through the
# .gnu_debuglink section. The build tree's binaries keep theirs.
get_filename_component(debug_dir "${DEBUG_FILE}" DIRECTORY)
file(MAKE_DIRECTORY "${debug_dir}")
foreach(step "--only-keep-debug;${FILE};${DEBUG_FILE}" "--strip-debug;--strip-unneeded;${FILE}"
        "--add-gnu-debuglink=${DEBUG_FILE};${FILE}")
  execute_process(COMMAND ${OBJCOPY} ${step} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "objcopy ${step} failed (${rc})")
  endif()
endforeach()
message(STATUS "Split debug info: ${FILE} -> ${DEBUG_FILE}")
