# languages.<lang>: examples/languages/<lang>/ run as a user would (build/example.sqlite opened read-only, the
# extension loaded the way the language's binding documents), every row it prints compared with the sqlite3 shell's
# and its Perfetto trace with the shell's, byte for byte (tests/languages/run_language.py, docs/languages.md).
# A language whose toolchain is not installed is reported as skipped (77) with what to install.
# Not under the sanitizers: the hosts are uninstrumented programs, which cannot load an ASan/TSan build of the .so
# (tests/run_all.sh leaves out sql., examples. and python. there for the same reason).
if(NSYSTRACE_SANITIZE)
  return()
endif()

foreach(lang c python node go rust java r ruby perl tcl)
  add_test(NAME languages.${lang}
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/run_language.py ${lang} ${SQLITE3_SHELL}
            $<TARGET_FILE:nsystrace> ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
  set_tests_properties(languages.${lang} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
